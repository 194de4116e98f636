package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// fakeJWT is a token of the API server's shape; its signature is made up
// (nothing here verifies it).
func fakeJWT(aud string, iat int64) string {
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	claims := `{"aud":["` + aud + `"],"exp":` + itoa(iat+600) + `,"iat":` + itoa(iat) + `,"iss":"https://kubernetes.default.svc.cluster.local",` +
		`"kubernetes.io":{"namespace":"team","node":{"name":"n1","uid":"a1b2c3d4-0000-4000-8000-000000000001"},"pod":{"name":"app","uid":"70c0e2e5-0000-4000-8000-00000000a001"},` +
		`"serviceaccount":{"name":"reader","uid":"5a5a5a5a-0000-4000-8000-00000000a002"}},"nbf":` + itoa(iat) + `,"sub":"system:serviceaccount:team:reader"}`
	return seg(`{"alg":"RS256","kid":"k1"}`) + "." + seg(claims) + ".c2lnbmF0dXJlLXNlY3JldA"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// fakeIssuer answers every TokenRequest with one token.
type fakeIssuer struct {
	token string
	err   error
	n     int
}

func (f *fakeIssuer) Token(ctx context.Context, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.n++
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

// The -o json record of a token holds its header and claims, never the
// token; `tokens claims` prints them back with the times decoded.
func TestTokenRecordsAndClaims(t *testing.T) {
	tok := fakeJWT("vault", 1767362645)
	var out bytes.Buffer
	rec := tokens.Recorder{Next: &fakeIssuer{token: tok}, Out: csiclient.NewJSONPrinter(&out, csiclient.Redactor{})}
	ctx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "kubelet", Operation: "SetUp", Volume: "data", Pod: "team/app"})
	if _, err := rec.Token(ctx, "team", "reader", vaultRequest()); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	if strings.Contains(line, tok) || strings.Contains(line, "c2lnbmF0dXJlLXNlY3JldA") {
		t.Fatalf("the record holds the token or its signature: %s", line)
	}
	for _, want := range []string{`"kind":"token"`, `"pod":"team/app"`, `"volume":"data"`, `"audience":"vault"`, `"service_account":"team/reader"`,
		`"fingerprint":"` + csiclient.TokenFingerprint(tok) + `"`, `"header":{"alg":"RS256","kid":"k1"}`, `"sub":"system:serviceaccount:team:reader"`} {
		if !strings.Contains(line, want) {
			t.Errorf("record lacks %s: %s", want, line)
		}
	}

	stdout, stderr, code := tokensCLI(t, "\n"+line+`{"kind":"summary"}`+"\n", "claims", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		`team/app volume data, SetUp at `, `audience "vault", ` + csiclient.TokenFingerprint(tok),
		"  sub             system:serviceaccount:team:reader\n", "  aud             vault\n",
		"  iat             2026-01-02T14:04:05Z\n", "  exp             2026-01-02T14:14:05Z (10m0s after iat)\n",
		"  pod             team/app (uid 70c0e2e5-0000-4000-8000-00000000a001)\n", "  node            n1 (uid a1b2c3d4-0000-4000-8000-000000000001)\n",
		"  serviceaccount  team/reader (uid 5a5a5a5a-0000-4000-8000-00000000a002)\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tokens claims lacks %q:\n%s", want, stdout)
		}
	}
	if _, _, code := tokensCLI(t, `{"kind":"summary"}`, "claims", "-"); code != session.ExitUsage {
		t.Errorf("no token: exit %d, want %d", code, session.ExitUsage)
	}
	if _, _, code := tokensCLI(t, "", "claims"); code != session.ExitUsage {
		t.Errorf("no FILE: exit %d, want %d", code, session.ExitUsage)
	}
}

// A trace made with --show-secrets, without token records: the tokens in
// NodePublishVolume's volume_context are decoded; fingerprints are not.
func TestTokensClaimsFromCalls(t *testing.T) {
	tok := fakeJWT("vault", 1767362645)
	call := `{"kind":"call","method":"NodePublishVolume","pod":"team/app","volume":"data","operation":"SetUp","request":{"volume_context":{"` + csiclient.TokensKey +
		`":"{\"vault\":{\"token\":\"` + tok + `\",\"expirationTimestamp\":\"2026-01-02T14:14:05Z\"},\"x\":{\"token\":\"<token sha256:00000000>\",\"expirationTimestamp\":\"2026-01-02T14:14:05Z\"}}"}}}`
	stdout, stderr, code := tokensCLI(t, call+"\n", "claims", "-o", "json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"audience":"vault"`) || !strings.Contains(lines[0], `"exp":"2026-01-02T14:14:05Z"`) || strings.Contains(stdout, tok) {
		t.Errorf("want the one real token, decoded, not itself:\n%s", stdout)
	}
}
