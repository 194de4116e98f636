package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/internal/tokentest"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// The -o json record of a token holds its header and claims, never the
// token; `tokens claims` prints them back with the times decoded.
func TestTokenRecordsAndClaims(t *testing.T) {
	tok := tokentest.JWT("vault", 1767362645)
	var out bytes.Buffer
	rec := tokens.Recorder{Next: &tokentest.Issuer{JWT: tok}, Out: csiclient.NewJSONPrinter(&out, csiclient.Redactor{})}
	ctx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "kubelet", Operation: "SetUp", Volume: "data", Pod: "team/app"})
	if _, err := rec.Token(ctx, "team", "reader", tokentest.VaultRequest()); err != nil {
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
	tok := tokentest.JWT("vault", 1767362645)
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
