package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// tokens verify takes a file holding the token (a token saved with >) as
// well as the token itself and - for stdin; a name that is neither says
// so (issue 32).
func TestTokensVerifyFile(t *testing.T) {
	e := newTokenEnv(t, "p256")
	tok := e.mint(t, "--audience", "vault")
	file := filepath.Join(e.dir, "token.jwt")
	if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const now = "2026-01-02T14:14:05Z"
	for _, tc := range []struct{ name, stdin, arg string }{{"file", "", file}, {"stdin", tok + "\n", "-"}, {"token", "", tok}} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := tokensCLI(t, tc.stdin, "verify", "--jwks", e.jwks, "--audience", "vault", "--now", now, tc.arg)
			var v struct {
				Claims map[string]any `json:"claims"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Claims["aud"] == nil {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
		})
	}
	missing := filepath.Join(e.dir, "tokn.jwt")
	_, errs, code := tokensCLI(t, "", "verify", "--jwks", e.jwks, "--now", now, missing)
	if code != session.ExitFailed || !strings.Contains(errs, "no file "+missing+" exists") {
		t.Errorf("a missing file: exit %d, stderr %q; want 1 and that no file %s exists", code, errs, missing)
	}
}
