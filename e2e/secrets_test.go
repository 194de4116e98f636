package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsNeverPrinted: the values of the secrets sample's Secrets
// (fixtures/samples/secrets/secrets.yaml: password "s3cr3t-stage", token
// "publish-secret", base64 cHVibGlzaC1zZWNyZXQ=) appear nowhere in the
// output unless --show-secrets (docs/output.md: redacted unless --show-secrets).
func TestSecretsNeverPrinted(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work)
	secretValues := []string{"s3cr3t-stage", "publish-secret", "cHVibGlzaC1zZWNyZXQ="}

	cases := []struct {
		name string
		args []string
		show bool
	}{
		{"text", nil, false},
		{"json", []string{"-o", "json"}, false},
		{"text-verbose", []string{"-v"}, false},
		{"json-verbose", []string{"-o", "json", "-v"}, false},
		{"text-show", []string{"--show-secrets"}, true},
		{"json-show", []string{"-o", "json", "--show-secrets"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(work, "root-"+tc.name)
			r := runSim(t, append([]string{"run", "-f", sample(t, "secrets"), "--endpoint", "unix://" + drv.Sock,
				"--root-dir", root, "--node-name", simNode}, tc.args...)...)
			wantCode(t, r, 0)
			assertNothingLeft(t, root, work)
			all := r.Stdout + r.Stderr
			if tc.show {
				for _, v := range secretValues[:2] {
					if !strings.Contains(all, v) {
						t.Errorf("--show-secrets: %q not printed", v)
					}
				}
				return
			}
			for _, v := range secretValues {
				if strings.Contains(all, v) {
					t.Errorf("secret value %q printed without --show-secrets", v)
				}
			}
		})
	}
}
