package controlplane

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// The kubelet's TokenRequests to the API server, and its answers, are
// lines of the trace once it is given.
func TestKubeletTokenRequestsTraced(t *testing.T) {
	tok := fakeJWT("vault", 1767362645)
	var text bytes.Buffer
	trace := csiclient.NewStreamingTrace(csiclient.NewTextPrinter(&text, csiclient.Redactor{}, false, false))
	api := &fakeIssuer{token: tok}
	k := &kubeletTokenRequests{api: api}
	if _, err := k.Token(context.Background(), "team", "reader", vaultRequest()); err != nil {
		t.Fatal(err)
	}
	if text.Len() != 0 {
		t.Errorf("printed before traceTo: %s", text.String())
	}
	k.traceTo(trace)
	if _, err := k.Token(context.Background(), "team", "reader", vaultRequest()); err != nil {
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
	api.err = errors.New("serviceaccounts \"reader\" is forbidden")
	if _, err := k.Token(context.Background(), "team", "reader", vaultRequest()); err == nil {
		t.Fatal("want the API's error")
	}
	if !strings.Contains(text.String(), "! [kubelet TokenRequest] API server: TokenRequest failed: serviceaccounts") {
		t.Errorf("a refused TokenRequest is a warning:\n%s", text.String())
	}
}

func fakeJWT(aud string, iat int64) string {
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	claims := `{"aud":["` + aud + `"],"exp":` + itoa(iat+600) + `,"iat":` + itoa(iat) + `,"iss":"https://kubernetes.default.svc.cluster.local",` +
		`"kubernetes.io":{"namespace":"team","node":{"name":"n1","uid":"a1b2c3d4-0000-4000-8000-000000000001"},"pod":{"name":"app","uid":"70c0e2e5-0000-4000-8000-00000000a001"},` +
		`"serviceaccount":{"name":"reader","uid":"5a5a5a5a-0000-4000-8000-00000000a002"}},"nbf":` + itoa(iat) + `,"sub":"system:serviceaccount:team:reader"}`
	return seg(`{"alg":"RS256","kid":"k1"}`) + "." + seg(claims) + ".c2lnbmF0dXJlLXNlY3JldA"
}

// fakeIssuer answers every TokenRequest with one token.
type fakeIssuer struct {
	token string
	err   error
}

func (f *fakeIssuer) Token(ctx context.Context, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := req.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{Token: f.token, ExpirationTimestamp: metav1.NewTime(time.Unix(1767362645+600, 0))}
	return out, nil
}

func vaultRequest() *authenticationv1.TokenRequest {
	exp := int64(600)
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: &exp,
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "app", UID: "70c0e2e5-0000-4000-8000-00000000a001"}}}
}
