package controlplane

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/internal/tokentest"
)

// The kubelet's TokenRequests to the API server, and its answers, are
// lines of the trace once it is given.
func TestKubeletTokenRequestsTraced(t *testing.T) {
	tok := tokentest.JWT("vault", 1767362645)
	var text bytes.Buffer
	trace := csiclient.NewStreamingTrace(csiclient.NewTextPrinter(&text, csiclient.Redactor{}, false, false))
	api := &tokentest.Issuer{JWT: tok}
	k := &kubeletTokenRequests{api: api}
	if _, err := k.Token(context.Background(), "team", "reader", tokentest.VaultRequest()); err != nil {
		t.Fatal(err)
	}
	if text.Len() != 0 {
		t.Errorf("printed before traceTo: %s", text.String())
	}
	k.traceTo(trace)
	if _, err := k.Token(context.Background(), "team", "reader", tokentest.VaultRequest()); err != nil {
		t.Fatal(err)
	}
	got := text.String()
	for _, want := range []string{
		"[kubelet TokenRequest] POST /api/v1/namespaces/team/serviceaccounts/reader/token: audiences [vault], expirationSeconds 600, bound to Pod team/app (uid 70c0e2e5-0000-4000-8000-00000000a001)\n",
		"[kubelet TokenRequest] API server: 201 Created, expirationTimestamp 2026-01-02T14:14:05Z, token " + csiclient.TokenFingerprint(tok) + " (valid 10m0s), sub system:serviceaccount:team:reader, pod team/app, node n1 (uid a1b2c3d4-0000-4000-8000-000000000001)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("trace lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, tok) {
		t.Error("the token is in the trace")
	}
	api.Err = errors.New("serviceaccounts \"reader\" is forbidden")
	if _, err := k.Token(context.Background(), "team", "reader", tokentest.VaultRequest()); err == nil {
		t.Fatal("want the API's error")
	}
	if !strings.Contains(text.String(), "! [kubelet TokenRequest] API server: TokenRequest failed: serviceaccounts") {
		t.Errorf("a refused TokenRequest is a warning:\n%s", text.String())
	}
}
