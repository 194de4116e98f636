package e2e

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestConformanceKilledThenCleanup: `conformance` killed (-9) after its
// CreateVolume, while a scenario's NodePublishVolume hangs, leaves the
// volume on the driver; `cleanup --root-dir` of its root dir deletes it
// from the record conformance wrote before the call (docs/kubelet.md
// §22.4), and leaves no mount, no scenario dir and no record.
func TestConformanceKilledThenCleanup(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--fault", "NodePublishVolume=hang:60s:1")
	root := filepath.Join(work, "root")
	if err := os.Mkdir(root, 0o750); err != nil {
		t.Fatal(err)
	}
	s := startSim(t, "conformance", "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"--focus", "^lifecycle/persistent$", "--parallel", "1", "-o", "json")
	data := filepath.Join(work, "refdata")
	var vols []os.DirEntry
	for deadline := time.Now().Add(30 * time.Second); len(vols) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no volume on the driver after 30s\n%s\n%s", s.out.String(), s.errb.String())
		}
		select {
		case <-s.exited:
			t.Fatalf("conformance ended before the kill\n%s\n%s", s.out.String(), s.errb.String())
		default:
		}
		vols, _ = os.ReadDir(data)
	}
	// The scenario's pod is being published: its NodePublishVolume hangs.
	time.Sleep(300 * time.Millisecond)
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	if vols, _ = os.ReadDir(data); len(vols) != 1 {
		t.Fatalf("volumes on the driver after the kill: %v, want the one CreateVolume made", vols)
	}
	r := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode, "-o", "json")
	wantCode(t, r, 0)
	ms := methods(calls(parseTrace(t, r)))
	if n := len(ms); n == 0 || ms[n-1] != "DeleteVolume" {
		t.Errorf("cleanup calls %v, want ... DeleteVolume\n%s", ms, r)
	}
	if left, _ := os.ReadDir(data); len(left) != 0 {
		t.Errorf("cleanup left the volume on the driver: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(root, ".csi-kubelet-sim", "*.controller")); len(left) > 0 {
		t.Errorf("cleanup left records: %v", left)
	}
	if ms := mountsUnder(work); len(ms) > 0 {
		t.Errorf("still mounted: %v", ms)
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left under the root dir: %v", names)
	}
}
