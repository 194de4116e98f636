package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leftBehindLine is the summary's "left behind" line of a text run.
func leftBehindLine(t *testing.T, stdout string) string {
	t.Helper()
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "left behind ") {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("no left behind line:\n%s", stdout)
	return ""
}

// TestRootMovedIsReported: the root dir is moved (renamed) while the pod
// runs; the teardown's calls name the old paths, and the driver's mounts
// stay under the new one. The summary must not say "left behind
// nothing": it names the moved root dir and the mounts still there, and
// the run fails.
func TestRootMovedIsReported(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work)
	root := filepath.Join(work, "root")
	moved := filepath.Join(work, "moved")
	sim := startSimInGroup(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--hold", "forever", "--volume-stats-agg-period", "0")
	waitMounted(t, targetPath(root, stagedUID, "pv-data"), 20*time.Second, sim.exited)
	if err := os.Rename(root, moved); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(-sim.cmd.Process.Pid, syscall.SIGTERM)
	r := sim.wait(t, simTimeout)
	still := mountsUnder(moved)
	if len(still) == 0 {
		t.Skipf("the teardown reached the moved mounts; nothing to misreport\n%s", r)
	}
	line := leftBehindLine(t, r.Stdout)
	if line == "left behind nothing" {
		t.Errorf("%q while %d mounts remain under %s: %v", line, len(still), moved, still)
	}
	if !strings.Contains(line, moved) {
		t.Errorf("the left behind line does not name %s: %s", moved, line)
	}
	if r.Code == 0 {
		t.Errorf("exit 0 with mounts left: %v", still)
	}
}

// TestHiddenMountNotCalledUnmounted: a tmpfs laid over the pod's CSI
// volumes dir while the pod runs (with a copy of the volume's dir: its
// vol_data.json and an empty mount dir, as a hostile driver lays it) hides the driver's mount at the
// target, which the driver answered OK for without unmounting: the
// unmount the simulator tries on a leftover mount cannot reach it. The
// summary must not say "unmounted by the simulator" of a mount that
// mountinfo still shows.
func TestHiddenMountNotCalledUnmounted(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work, "--fault", "NodeUnpublishVolume=skip")
	root := filepath.Join(work, "root")
	sim := startSimInGroup(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--hold", "forever", "--volume-stats-agg-period", "0")
	target := targetPath(root, stagedUID, "pv-data")
	waitMounted(t, target, 20*time.Second, sim.exited)
	// The tmpfs holds what the kubelet's teardown looks for (a copy of
	// vol_data.json, an empty mount dir), so the teardown goes on in it.
	volDir := filepath.Dir(target)
	volData, err := os.ReadFile(filepath.Join(volDir, "vol_data.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", filepath.Dir(volDir), "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(volDir, "vol_data.json"), volData, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(-sim.cmd.Process.Pid, syscall.SIGTERM)
	r := sim.wait(t, simTimeout)
	line := leftBehindLine(t, r.Stdout)
	for _, m := range regexp.MustCompile(`mount (\S+) \(the driver's, left after it answered OK; unmounted by the simulator\)`).FindAllStringSubmatch(line, -1) {
		if isMountPoint(m[1]) {
			t.Errorf("said to be unmounted by the simulator, still in mountinfo: %s\n%s", m[1], line)
		}
	}
	if !isMountPoint(target) {
		t.Skip("the target's mount went after all")
	}
	// Named itself, or inside its volume's dir named as kept: the walk
	// refuses the tmpfs over the volumes dir (a mount where the
	// simulator's own dir was), so the volume, mount and all, is kept
	// for cleanup.
	if !strings.Contains(line, target) && !strings.Contains(line, "volume "+volDir+" (the simulator's: kept") {
		t.Errorf("the left behind line names neither the mount still at %s nor its volume dir as kept: %s", target, line)
	}
	if r.Code == 0 {
		t.Errorf("exit 0 with the mount at %s left", target)
	}
}
