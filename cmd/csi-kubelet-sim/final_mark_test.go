package main

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// A failure the kubelet retries is not called final in the trace: the
// event of a final error (Internal) has no "(final)" before "the kubelet
// retries"; an uncertain one keeps its mark (issue 32).
func TestFailureEventNotFinalWhenRetried(t *testing.T) {
	const staged = "../../fixtures/samples/staged/staged.yaml"
	for _, tc := range []struct {
		code codes.Code
		mark string
	}{{codes.Internal, ""}, {codes.Unavailable, " (uncertain)"}} {
		t.Run(tc.code.String(), func(t *testing.T) {
			d := stagingDriver()
			d.FailNext("NodePublishVolume", tc.code, 1)
			sock := csifake.ServeTest(t, d)
			root := filepath.Join(t.TempDir(), "root")
			stdout, stderr, code := cli(t, "", "run", "-f", staged, "--endpoint", sock, "--root-dir", root, "--node-name", "n1", "--max-attempts", "2")
			if code != session.ExitOK {
				t.Fatalf("exit %d (the retry succeeds)\n%s\n%s", code, stdout, stderr)
			}
			if strings.Contains(stdout, "(final)") {
				t.Errorf("the trace calls a retried failure final:\n%s", stdout)
			}
			event := "csifake: injected " + tc.code.String() + tc.mark + "\n"
			if !strings.Contains(stdout, event) || !strings.Contains(stdout, "attempt 1 failed; the kubelet retries") {
				t.Errorf("no failure event ending %q followed by the retry note:\n%s", event, stdout)
			}
		})
	}
}
