package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// `tokens mint --kubelet-version` (and --feature-gates) gives the claims of
// that release's API server, from the same release object as run's: the
// same values accepted, the same refused, in the same words (issue 17).
func TestTokensMintRelease(t *testing.T) {
	e := newTokenEnv(t, "rsa")
	claims := func(t *testing.T, extra ...string) map[string]any {
		t.Helper()
		tok := e.mint(t, append([]string{"--node", "node-1"}, extra...)...)
		var doc verifiedDoc
		if err := json.Unmarshal([]byte(tokensOK(t, "verify", "--jwks", e.jwks, "--now", "2026-01-02T14:10:00Z", tok)), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Claims
	}
	for _, tc := range []struct {
		args              []string
		wantJTI, wantNode bool
	}{
		{nil, true, true},
		{[]string{"--kubelet-version", "1.31"}, true, true},
		{[]string{"--kubelet-version", "v1.31.14", "--feature-gates", "ServiceAccountTokenJTI=false"}, false, true},
		{[]string{"--kubelet-version", "1.30", "--feature-gates", "ServiceAccountTokenPodNodeInfo=false"}, true, false},
		// 1.38 removed the gates after GA: the claims stay.
		{[]string{"--kubelet-version", "1.38"}, true, true},
		{[]string{"--kubelet-version", "v1.38.0-beta.0"}, true, true},
		{[]string{"--kubelet-version", "1.37", "--feature-gates", "ServiceAccountTokenJTI=true,ServiceAccountTokenNodeBinding=true"}, true, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c := claims(t, tc.args...)
			if _, ok := c["jti"]; ok != tc.wantJTI {
				t.Errorf("jti present %t, want %t", ok, tc.wantJTI)
			}
			k8s, _ := c["kubernetes.io"].(map[string]any)
			if _, ok := k8s["node"]; ok != tc.wantNode {
				t.Errorf("kubernetes.io.node present %t, want %t: %v", ok, tc.wantNode, k8s)
			}
		})
	}
	pod := []string{"mint", "--service-account-key-file", e.priv, "--pod", "web-0", "--pod-uid", "c0ffee00-1111-4222-8333-444455556666"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubelet-version", "1.29"}, `csi-kubelet-sim: --kubelet-version: kubelet version "1.29": want 1.30 to ` + fmt.Sprintf("1.%d", node.MaxMinor) + "\n"},
		{[]string{"--kubelet-version", "1.38", "--feature-gates", "ServiceAccountTokenJTI=true"},
			"csi-kubelet-sim: --feature-gates: unrecognized feature gate: ServiceAccountTokenJTI (kubelet 1.38: removed in 1.38, GA and always on since 1.32; drop it from --feature-gates)\n"},
		{[]string{"--kubelet-version", "1.37", "--feature-gates", "ServiceAccountTokenJTI=false"},
			"csi-kubelet-sim: --feature-gates: cannot set feature gate ServiceAccountTokenJTI to false, feature is locked to true\n"},
	} {
		_, errs, code := tokensCLI(t, "", append(pod, tc.args...)...)
		if code != session.ExitUsage || errs != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.args, code, errs, session.ExitUsage, tc.want)
		}
		_, runErrs, runCode := cli(t, "", append([]string{"plan", "--driver-name", testDriver}, tc.args...)...)
		if runCode != code || runErrs != errs {
			t.Errorf("%v: plan says exit %d %q, mint exit %d %q: want the same", tc.args, runCode, runErrs, code, errs)
		}
	}
}

// A --pod-uid that run refuses (it would become the directory pods/<uid>)
// is refused by mint too, with the same message.
func TestTokensMintPodUID(t *testing.T) {
	e := newTokenEnv(t, "p256")
	for _, uid := range []string{"../../x", "1b4e...", "a/b", strings.Repeat("a", 254)} {
		_, errs, code := tokensCLI(t, "", "mint", "--service-account-key-file", e.priv, "--pod", "web-0", "--pod-uid", uid)
		_, runErrs, runCode := cli(t, "", "plan", "--driver-name", testDriver, "--root-dir", filepath.Join(t.TempDir(), "r"), "--pod-uid", uid)
		if code != session.ExitUsage || !strings.HasPrefix(errs, "csi-kubelet-sim: --pod-uid: Invalid value: ") {
			t.Errorf("mint --pod-uid %q: exit %d, stderr %q; want %d and the --pod-uid field", uid, code, errs, session.ExitUsage)
		}
		if runCode != code || runErrs != errs {
			t.Errorf("--pod-uid %q: plan says exit %d %q, mint exit %d %q: want the same", uid, runCode, runErrs, code, errs)
		}
	}
}
