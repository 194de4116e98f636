package e2e

// One owner per root dir (issue 18, item 1): while a run holds a root dir,
// a second run, load, conformance or cleanup on it (or cleanup on a parent
// of it) exits 3 naming the run's PID and command, and touches nothing; of
// several runs started at the same instant exactly one goes ahead; a lock
// left by kill -9 is taken over.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockLive starts a run that holds the staged sample's volume on root.
func lockLive(t *testing.T, root, ep string) *bgSim {
	t.Helper()
	sim := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root,
		"--node-name", simNode, "--hold", "forever", "--volume-stats-agg-period", "0", "-o", "json")
	rcvWaitInUse(t, root, "staged", sim.exited)
	return sim
}

// lockStop ends a live run with Ctrl-C: it tears down as usual, and
// exits 0 (Ctrl-C is how --hold forever ends).
func lockStop(t *testing.T, sim *bgSim) {
	t.Helper()
	if err := sim.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if r := sim.wait(t, 30*time.Second); r.Code != 0 {
		t.Errorf("the live run, stopped: exit %d, want 0\n%s", r.Code, r)
	}
}

// TestLockSecondCommandRefused: every command that would make, mount or
// remove something on a held root dir is refused with exit 3 naming the
// holder; the live run's volume stays mounted and the run then ends clean.
func TestLockSecondCommandRefused(t *testing.T) {
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work)
	ep := "unix://" + drv.Sock
	live := lockLive(t, root, ep)
	target := targetPath(root, stagedUID, semPV)
	holder := fmt.Sprintf("PID %d (`csi-kubelet-sim run`", live.cmd.Process.Pid)
	second := map[string][]string{
		"run":             {"run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root, "--node-name", simNode},
		"load":            {"load", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root, "--node-name", simNode, "--replicas", "2"},
		"conformance":     {"conformance", "--endpoint", ep, "--root-dir", root, "--node-name", simNode},
		"cleanup":         {"cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode},
		"cleanup-parent":  {"cleanup", "--root-dir", work, "--endpoint", ep, "--node-name", simNode},
		"cleanup-symlink": {"cleanup", "--root-dir", lockSymlinkTo(t, work, root), "--endpoint", ep, "--node-name", simNode},
		"run-inside":      {"run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", filepath.Join(root, "inner"), "--node-name", simNode},
	}
	for name, args := range second {
		before := lockSnapshot(root)
		r := runSim(t, args...)
		wantCode(t, r, 3)
		if !strings.Contains(r.Stderr, holder) || !strings.Contains(r.Stderr, "in use by a running csi-kubelet-sim") {
			t.Errorf("%s: the refusal does not name the live run (%s):\n%s", name, holder, r)
		}
		if strings.Contains(r.Stderr, "csi-kubelet-sim cleanup --root-dir") {
			t.Errorf("%s: the refusal of a live root dir points at cleanup:\n%s", name, r)
		}
		if !isMountPoint(target) {
			t.Fatalf("%s: the live run's volume was unmounted", name)
		}
		if after := lockSnapshot(root); !slices.Equal(before, after) {
			t.Errorf("%s: the refused command changed the root dir:\n before %q\n after  %q", name, before, after)
		}
	}
	lockStop(t, live)
	assertNothingLeft(t, root, work)
}

// lockSnapshot is rcvSnapshot without the size of the live run's journal,
// which the live run itself may still append to.
func lockSnapshot(root string) []string {
	var out []string
	for _, l := range rcvSnapshot(root) {
		if p, _, ok := strings.Cut(l, " "); ok && strings.HasSuffix(p, ".journal") {
			l = p
		}
		out = append(out, l)
	}
	return out
}

func lockSymlinkTo(t *testing.T, work, root string) string {
	t.Helper()
	link := filepath.Join(work, "root-link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// TestLockConcurrentStarts: runs started at the same instant on one
// existing root dir: exactly one goes ahead (exit 0), the others exit 3
// naming it; tried over several rounds.
func TestLockConcurrentStarts(t *testing.T) {
	const rounds, starters = 4, 6
	work := fltWork(t)
	drv := fltStartRef(t, work)
	ep := "unix://" + drv.Sock
	for round := range rounds {
		root := filepath.Join(work, fmt.Sprintf("root-%d", round))
		if err := os.Mkdir(root, 0o750); err != nil {
			t.Fatal(err)
		}
		results := make([]simResult, starters)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range starters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i] = runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root,
					"--node-name", simNode, "--hold", "2s", "--volume-stats-agg-period", "0")
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for _, r := range results {
			switch {
			case r.Code == 0:
				won++
			case r.Code == 3 && strings.Contains(r.Stderr, "in use by a running csi-kubelet-sim, PID "):
			default:
				t.Errorf("round %d: neither the winner nor refused as in use:\n%s", round, r)
			}
		}
		if won != 1 {
			t.Errorf("round %d: %d of %d simultaneous runs went ahead, want exactly 1", round, won, starters)
		}
		if left := simOwnLeft(root); len(left) != 1 || left[0] != "path "+root {
			t.Errorf("round %d: left under the root dir: %v", round, left)
		}
	}
	t.Logf("%d rounds of %d simultaneous starts: one winner each", rounds, starters)
}

// TestLockStaleAfterKill9: a run killed with SIGKILL leaves its lock file;
// the kernel dropped its flock, so cleanup takes it over (and says so),
// finishes, and leaves nothing, the lock file included.
func TestLockStaleAfterKill9(t *testing.T) {
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work)
	ep := "unix://" + drv.Sock
	live := lockLive(t, root, ep)
	pid := live.cmd.Process.Pid
	if err := live.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-live.exited
	r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root, "--node-name", simNode)
	wantCode(t, r, 3)
	oneLineError(t, r, "earlier run", "the run that wrote them is gone", "csi-kubelet-sim cleanup --root-dir "+root)
	c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
	wantCode(t, c, 0)
	if want := fmt.Sprintf("locked by PID %d (`csi-kubelet-sim run`", pid); !strings.Contains(c.Stderr, want) || !strings.Contains(c.Stderr, "lock taken over") {
		t.Errorf("cleanup does not report the stale lock of %d:\n%s", pid, c)
	}
	if left := simOwnLeft(root); len(left) > 0 {
		t.Errorf("left after cleanup: %v", left)
	}
}

// TestLockLiveJournalNotCleanup: a live run whose lock file is gone (as
// with a release before the lock) still has its journal: a second run is
// refused as "in use", naming the live PID, and never told to clean up;
// cleanup refuses it too.
func TestLockLiveJournalNotCleanup(t *testing.T) {
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work)
	ep := "unix://" + drv.Sock
	live := lockLive(t, root, ep)
	if err := os.Remove(filepath.Join(root, ".csi-kubelet-sim", "lock")); err != nil {
		t.Fatal(err)
	}
	holder := fmt.Sprintf("PID %d (`csi-kubelet-sim run`", live.cmd.Process.Pid)
	for _, args := range [][]string{
		{"run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root, "--node-name", simNode},
		{"cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode},
	} {
		r := runSim(t, args...)
		wantCode(t, r, 3)
		if !strings.Contains(r.Stderr, holder) || strings.Contains(r.Stderr, "csi-kubelet-sim cleanup --root-dir") {
			t.Errorf("%s: want the live run named and no cleanup advice:\n%s", args[0], r)
		}
		if !isMountPoint(targetPath(root, stagedUID, semPV)) {
			t.Fatalf("%s: the live run's volume was unmounted", args[0])
		}
	}
	lockStop(t, live)
}
