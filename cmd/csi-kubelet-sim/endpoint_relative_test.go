package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// --endpoint takes a relative socket path from the working directory,
// as a shell user means it; what is not a socket is still refused
// (issue 32).
func TestRelativeEndpoint(t *testing.T) {
	sample, err := filepath.Abs("../../fixtures/samples/staged/staged.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sock := csifake.ServeTest(t, stagingDriver())
	dir, name := filepath.Split(sock)
	t.Chdir(dir)
	if err := os.WriteFile("plain", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	for _, ep := range []string{name, "./" + name, "unix://" + name} {
		_, stderr, code := cli(t, "", "run", "-f", sample, "--endpoint", ep, "--root-dir", root, "--node-name", "n1")
		if code != session.ExitOK {
			t.Errorf("--endpoint %s: exit %d, want 0\n%s", ep, code, stderr)
		}
	}
	_, stderr, code := cli(t, "", "run", "--endpoint", "plain", "--root-dir", root, "--node-name", "n1")
	if code != session.ExitEnvironment || !strings.Contains(stderr, filepath.Join(dir, "plain")+": not a unix socket") {
		t.Errorf("--endpoint plain (a file): exit %d, want 3 and not a unix socket\n%s", code, stderr)
	}
}
