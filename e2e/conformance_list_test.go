package e2e

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// conformance --list names every scenario without a driver; a failure
// prints the command that runs just that scenario again, and that
// command runs it alone (issue 23).
func TestConformanceListAndRerun(t *testing.T) {
	t.Parallel()
	list := runSim(t, "conformance", "--list")
	wantCode(t, list, 0)
	if !strings.Contains(list.Stdout, "lifecycle/persistent ") || !strings.Contains(list.Stdout, "§11") {
		t.Errorf("--list:\n%s", list)
	}
	n := strings.Count(list.Stdout, "\n")

	work := workDir(t)
	drv := startRefDriver(t, work, "--fault", "NodeUnpublishVolume=Internal")
	r := runSim(t, "conformance", "--endpoint", "unix://"+drv.Sock)
	wantCode(t, r, 1)
	var rerun string
	for _, line := range strings.Split(r.Stdout, "\n") {
		if _, after, ok := strings.Cut(line, "rerun just this one: "); ok {
			rerun = after
			break
		}
	}
	if !strings.HasPrefix(rerun, "csi-kubelet-sim conformance --endpoint unix://"+drv.Sock) || !strings.Contains(rerun, "--focus '^") {
		t.Fatalf("no rerun hint after a failure:\n%s", r)
	}
	// The hint, as a shell runs it, with the binary under test.
	cmd := exec.Command("sh", "-c", simBin(t)+strings.TrimPrefix(rerun, "csi-kubelet-sim"))
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("rerun %q: %v\n%s", rerun, err, out)
	}
	if !strings.Contains(string(out), "0 passed, 1 failed, 0 skipped, "+strconv.Itoa(n-1)+" not selected") {
		t.Errorf("the rerun should run the one scenario:\n%s", out)
	}
}
