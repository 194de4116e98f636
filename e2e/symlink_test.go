package e2e

// Paths resolved once, then held (issue 18, item 2): a root dir given
// through a symlink is worked in at its real path (so what the driver left
// is seen), and a symlink planted in the root's own dirs, before or during
// a run, is refused with exit 2 naming it; nothing outside the root dir is
// created, written or removed through it.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSymlinkRootDirSeesLeftovers: --root-dir through a symlink, and a
// driver that answers NodeUnpublishVolume OK but leaves the mount: the run
// says where it works, reports the mount left behind (exit 1), and with
// `cleanup` nothing stays mounted.
func TestSymlinkRootDirSeesLeftovers(t *testing.T) {
	work := fltWork(t)
	real := filepath.Join(work, "real-root")
	if err := os.Mkdir(real, 0o750); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(work, "kubelet")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	drv := fltStartRef(t, work, "--fault", "NodeUnpublishVolume=skip")
	r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", link,
		"--node-name", simNode, "--volume-stats-agg-period", "0")
	wantCode(t, r, 1)
	if !strings.Contains(r.Stderr, "--root-dir "+link+" is "+real) {
		t.Errorf("the resolved root dir is not reported:\n%s", r)
	}
	if !strings.Contains(r.Stdout, "left mounted by the driver") || !strings.Contains(r.Stdout+r.Stderr, targetPath(real, stagedUID, semPV)) {
		t.Errorf("the mount the driver left is not reported at its real path:\n%s", r)
	}
	if strings.Contains(r.Stdout, "left behind nothing") {
		t.Errorf("reported nothing left behind:\n%s", r)
	}
	if isMountPoint(targetPath(real, stagedUID, semPV)) {
		t.Errorf("the target the driver left mounted is still mounted")
	}
	// The staged volume may be kept for cleanup (its unstage waits for
	// the target's mount to go); cleanup through the symlink finishes it.
	c := runSim(t, "cleanup", "--root-dir", link, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
	wantCode(t, c, 0)
	if ms := mountsUnder(real); len(ms) > 0 {
		t.Errorf("still mounted after cleanup: %v", ms)
	}
}

// symlinkCase plants a symlink at rel (under the root dir) before a run.
type symlinkCase struct {
	rel    string
	sample string
	code   int
}

// TestSymlinkPlantedBefore: a symlink to a directory outside the root dir
// planted where the run makes its own dirs: exit 2 naming it (a pod dir
// already there is someone else's: exit 3), and nothing is made outside.
func TestSymlinkPlantedBefore(t *testing.T) {
	cases := []symlinkCase{
		{"pods", "staged", 2},
		{"plugins", "staged", 2},
		{"plugins/kubernetes.io", "staged", 2},
		{"plugins/kubernetes.io/csi", "staged", 2},
		{"plugins/kubernetes.io/csi/volumeDevices", "block", 2},
		{".csi-kubelet-sim", "staged", 2},
		{"pods/" + stagedUID, "staged", 3},
	}
	work := fltWork(t)
	drv := fltStartRef(t, work)
	for i, tc := range cases {
		root := filepath.Join(work, "root-"+strings.ReplaceAll(tc.rel, "/", "_"))
		outside := filepath.Join(work, "outside-"+string(rune('a'+i)))
		for _, d := range []string{filepath.Dir(filepath.Join(root, tc.rel)), outside} {
			if err := os.MkdirAll(d, 0o750); err != nil {
				t.Fatal(err)
			}
		}
		planted := filepath.Join(root, tc.rel)
		if err := os.Symlink(outside, planted); err != nil {
			t.Fatal(err)
		}
		before := sfTree(root)
		r := runSim(t, "run", "-f", sample(t, tc.sample), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
			"--node-name", simNode, "--volume-stats-agg-period", "0")
		if r.Code != tc.code || !strings.Contains(r.Stderr, planted) {
			t.Errorf("%s: want exit %d naming %s:\n%s", tc.rel, tc.code, planted, r)
		}
		if entries, _ := os.ReadDir(outside); len(entries) > 0 {
			t.Errorf("%s: made %v outside the root dir, through the symlink", tc.rel, entries)
		}
		if ms := slices.Concat(mountsUnder(outside), mountsUnder(root)); len(ms) > 0 {
			t.Errorf("%s: mounted %v", tc.rel, ms)
		}
		if after := sfTree(root); !slices.Equal(before, after) {
			t.Errorf("%s: the root dir changed:\n before %q\n after  %q", tc.rel, before, after)
		}
	}
	t.Logf("%d symlinks planted before a run: each refused, nothing made outside", len(cases))
}

// TestSymlinkSwappedDuringRun: while the pod runs, a directory of the
// run's (the pod volume dir, or pods/) is moved away and replaced by a
// symlink to a directory outside that looks the same (a vol_data.json and
// a file). The teardown removes nothing through it: exit 2 naming
// it, and the outside directory keeps its files.
func TestSymlinkSwappedDuringRun(t *testing.T) {
	for _, swap := range []string{"volume", "pods"} {
		t.Run(swap, func(t *testing.T) {
			work := fltWork(t)
			root := filepath.Join(work, "root")
			drv := fltStartRef(t, work)
			sim := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--hold", "3s", "--volume-stats-agg-period", "0")
			rcvWaitInUse(t, root, "staged", sim.exited)
			dir := filepath.Join(root, "pods")
			if swap == "volume" {
				dir = filepath.Dir(targetPath(root, stagedUID, semPV))
			}
			outside := filepath.Join(work, "outside")
			mirror := outside
			if swap == "pods" {
				mirror = filepath.Dir(strings.Replace(targetPath(root, stagedUID, semPV), filepath.Join(root, "pods"), outside, 1))
			}
			// The driver deletes the target path it is given (CSI), through
			// the symlink too; nothing else behind it may go.
			if err := os.MkdirAll(mirror, 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mirror, "precious"), []byte("data"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mirror, "vol_data.json"), []byte(readFile(filepath.Join(filepath.Dir(targetPath(root, stagedUID, semPV)), "vol_data.json"))), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dir, dir+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, dir); err != nil {
				t.Fatal(err)
			}
			before := sfTree(outside)
			r := sim.wait(t, 60*time.Second)
			if r.Code != 2 || !strings.Contains(r.Stderr, dir+" is a symlink") {
				t.Errorf("want exit 2 naming %s:\n%s", dir, r)
			}
			if after := sfTree(outside); !slices.Equal(before, after) {
				t.Errorf("the directory behind the symlink changed:\n before %q\n after  %q", before, after)
			}
		})
	}
}
