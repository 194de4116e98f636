package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInterruptDuringHold: Ctrl-C while the pod is held forever tears
// down (NodeUnpublish, then NodeUnstage, after the signal) and leaves
// nothing behind; it is how such a run is meant to end, so it exits 0
// (README, "Exit codes"), its summary saying so.
func TestInterruptDuringHold(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	sim := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock,
		"--root-dir", root, "--node-name", simNode, "--hold", "forever", "--volume-stats-agg-period", "0", "-o", "json")

	target := targetPath(root, stagedUID, "pv-data")
	staging := stagingPath(root, refDriverName, "vol-data-1")
	waitMounted(t, target, 10*time.Second, sim.exited)
	if !isMountPoint(staging) {
		t.Errorf("staging path %s not mounted", staging)
	}
	// Held forever: still mounted a while later.
	time.Sleep(300 * time.Millisecond)
	select {
	case <-sim.exited:
		t.Fatalf("--hold forever: the run ended by itself")
	default:
	}
	if !isMountPoint(target) {
		t.Fatalf("target unmounted before the signal")
	}

	signalled := time.Now()
	if err := sim.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := sim.wait(t, 30*time.Second)
	wantCode(t, r, 0)
	if r.Stderr != "" {
		t.Errorf("stderr %q after a clean end of --hold forever", r.Stderr)
	}
	if !strings.Contains(r.Stdout, `"hold_ended":true`) || !strings.Contains(r.Stdout, `"result":"OK"`) {
		t.Errorf("the summary does not say OK, hold ended:\n%s", r.Stdout)
	}
	assertNothingLeft(t, root, work)

	lines := parseTrace(t, r)
	var after []string
	for _, c := range calls(lines) {
		if c.Time.After(signalled) {
			after = append(after, c.Method)
		} else if c.Method == "NodeUnpublishVolume" || c.Method == "NodeUnstageVolume" {
			t.Errorf("%s before the signal (at %v, signal at %v)", c.Method, c.Time, signalled)
		}
	}
	// docs/kubelet.md §11: NodeUnpublishVolume (no capability query), then
	// UnmountDevice: NodeGetCapabilities, NodeUnstageVolume.
	if got, want := strings.Join(after, ","), "NodeUnpublishVolume,NodeGetCapabilities,NodeUnstageVolume"; got != want {
		t.Errorf("calls after SIGINT:\n got %s\nwant %s", got, want)
	}
	for _, c := range calls(lines) {
		if c.Time.After(signalled) && c.Code != "OK" {
			t.Errorf("teardown call failed: %s", c.Raw)
		}
	}
	if s := summary(t, lines); !s.Interrupt {
		t.Errorf("summary does not say interrupted: %s", s.Raw)
	}
}
