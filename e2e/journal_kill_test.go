package e2e

// A journal that converges (issue 18, item 3): the run is killed with
// SIGKILL at every step of its journal (the test-only hook
// CSI_KUBELET_SIM_TEST_KILL_AT=N kills it just before it writes record N),
// and `cleanup` then always finishes: exit 0, no mount, no directory of
// the run's, no loop device left.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// jkRun runs the simulator with the kill hook set; killed tells whether it
// died of SIGKILL.
func jkRun(t *testing.T, step int, args ...string) (killed bool, r simResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), simTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, simBin(t), args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("CSI_KUBELET_SIM_TEST_KILL_AT=%d", step))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r = simResult{Args: args, Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.Code = ee.ExitCode()
		killed = strings.Contains(ee.String(), "killed")
	} else if err != nil {
		t.Fatalf("run: %v", err)
	}
	return killed, r
}

// TestJournalKillAtEveryStep: for the staged and the block sample, the
// run is killed before each journal record in turn until a run gets
// through; after each kill `cleanup` exits 0 and leaves nothing but, at
// most, the empty root dir (when the kill came before the journal named
// it), and a second `cleanup` has nothing to do.
func TestJournalKillAtEveryStep(t *testing.T) {
	for _, name := range []string{"staged", "block", "inline", "attach", "secrets", "tokens"} {
		t.Run(name, func(t *testing.T) {
			work := fltWork(t)
			drv := fltStartRef(t, work)
			ep := "unix://" + drv.Sock
			steps := 0
			for step := 1; step < 400; step++ {
				root := filepath.Join(work, fmt.Sprintf("root-%03d", step))
				killed, r := jkRun(t, step, "run", "-f", sample(t, name), "--endpoint", ep, "--root-dir", root,
					"--node-name", simNode, "--volume-stats-agg-period", "0")
				if !killed {
					wantCode(t, r, 0)
					break
				}
				steps++
				c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
				if c.Code != 0 {
					t.Errorf("kill before record %d: cleanup exit %d\n%s", step, c.Code, c)
				}
				if left := jkLeft(root, work); len(left) > 0 {
					t.Errorf("kill before record %d: left after cleanup: %v\n%s", step, left, c)
				}
				again := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
				if again.Code != 0 || !strings.Contains(again.Stdout, "nothing to do") {
					t.Errorf("kill before record %d: a second cleanup has something to do:\n%s", step, again)
				}
				if t.Failed() {
					return
				}
			}
			if steps < 10 {
				t.Fatalf("only %d kill points: the hook is not working", steps)
			}
			t.Logf("%s: killed at each of %d journal steps; cleanup finished every time", name, steps)
		})
	}
}

// jkLeft is what is left of a run and its cleanup: any path under root
// but root itself (when empty), any mount under work, any loop device
// backed by a file under work.
func jkLeft(root, work string) []string {
	var left []string
	for _, l := range simOwnLeft(root) {
		if l != "path "+root {
			left = append(left, l)
		}
	}
	for _, m := range mountsUnder(work) {
		left = append(left, "mount "+m)
	}
	return append(left, fltLoopsUnder(work)...)
}

// TestJournalCallInFlight: the run is killed just after it journaled its
// NodePublishVolume and before the answer, and the driver finishes the
// publish afterwards (its mount appears at the target, done here by
// hand). `cleanup` asks the driver to unpublish; this driver answers OK
// and leaves the mount: `cleanup` does not unmount it itself (the driver
// may still be in its call, and unmounting under it leaks what it holds),
// says so, exits 1 and keeps the journal. With a driver that unpublishes,
// the next `cleanup` finishes, exit 0, nothing left.
func TestJournalCallInFlight(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work, "--fault", "NodeUnpublishVolume=skip")
	ep := "unix://" + drv.Sock
	root, target := "", ""
	for step := 1; step < 100 && target == ""; step++ {
		root = filepath.Join(work, fmt.Sprintf("root-%03d", step))
		killed, r := jkRun(t, step, "run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root,
			"--node-name", simNode, "--volume-stats-agg-period", "0")
		if !killed {
			t.Fatalf("the run got through without a NodePublishVolume journaled:\n%s", r)
		}
		if strings.HasSuffix(strings.TrimSpace(jkJournal(t, root)), `{"k":"call","p":"`+targetPath(root, stagedUID, semPV)+`","op":"NodePublishVolume"}`) {
			target = targetPath(root, stagedUID, semPV)
			break
		}
		// an earlier step: finished, so that it holds nothing of the volume
		if c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode); c.Code != 0 {
			t.Fatalf("kill before record %d: cleanup:\n%s", step, c)
		}
	}
	if target == "" {
		t.Fatal("no step left NodePublishVolume unanswered")
	}
	bindMount(t, filepath.Join(work, "late-publish"), target) // the driver, finishing late
	c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
	wantCode(t, c, 1)
	if !isMountPoint(target) {
		t.Fatalf("cleanup unmounted the target of an unanswered NodePublishVolume itself:\n%s", c)
	}
	if !strings.Contains(c.Stdout, "may still be running in the driver") || !strings.Contains(c.Stdout, "NodeUnpublishVolume") {
		t.Errorf("cleanup does not say it left the mount to the driver, after asking it:\n%s", c)
	}
	drv.Stop()
	_ = os.Remove(drv.Sock)
	fltStartRef(t, work) // the same socket, a driver that unpublishes
	again := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
	wantCode(t, again, 0)
	if left := jkLeft(root, work); len(left) > 0 {
		t.Errorf("left after the second cleanup: %v\n%s", left, again)
	}
}

// jkJournal is the text of the run's journal under root.
func jkJournal(t *testing.T, root string) string {
	t.Helper()
	js, _ := filepath.Glob(filepath.Join(root, ".csi-kubelet-sim", "*.journal"))
	if len(js) != 1 {
		return ""
	}
	return readFile(js[0])
}

// TestJournalHugeHandle: a PV whose volumeHandle is 1000 KiB puts a line
// of about that size in the journal (a record may have up to 1 MiB).
// Killed once that line is written, the run's journal is read back by
// `cleanup` whole: it reconstructs the volume and asks the driver to
// unstage it with the full handle. (The reference driver then refuses a
// handle over 1024 bytes, its own limit, so the volume stays for the
// driver.) A 1.2 MB handle, whose record would not fit, is refused before
// anything of its volume is made: exit 2, nothing left.
func TestJournalHugeHandle(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work)
	ep := "unix://" + drv.Sock
	staged := readFile(filepath.Join(sample(t, "staged"), "staged.yaml"))
	over := writeFile(t, work, "over.yaml", strings.Replace(staged, "volumeHandle: vol-data-1", "volumeHandle: "+strings.Repeat("h", 1200*1024), 1))
	overRoot := filepath.Join(work, "root-over")
	r := runSim(t, "run", "-f", over, "--endpoint", ep, "--root-dir", overRoot, "--node-name", simNode, "--volume-stats-agg-period", "0")
	wantCode(t, r, 2)
	if !strings.Contains(r.Stderr, "does not fit a journal record of at most 1 MiB") {
		t.Errorf("a 1.2 MB handle: the refusal does not say why:\n%.3000s", r.String())
	}
	if left := jkLeft(overRoot, work); len(left) > 0 {
		t.Errorf("a 1.2 MB handle: left %v", left)
	}
	handle := strings.Repeat("h", 1000*1024)
	in := writeFile(t, work, "huge.yaml", strings.Replace(staged, "volumeHandle: vol-data-1", "volumeHandle: "+handle, 1))
	for step := 1; step < 60; step++ {
		root := filepath.Join(work, fmt.Sprintf("root-%03d", step))
		if killed, r := jkRun(t, step, "run", "-f", in, "--endpoint", ep, "--root-dir", root, "--node-name", simNode, "--volume-stats-agg-period", "0"); !killed {
			t.Fatalf("the run got through without the handle journaled:\n%.2000s", r.String())
		}
		if len(jkJournal(t, root)) < len(handle) {
			if c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode); c.Code != 0 {
				t.Fatalf("kill before record %d: cleanup:\n%.2000s", step, c.String())
			}
			continue
		}
		c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode, "-o", "json")
		if strings.Contains(c.Stderr, "longer than 1 MiB") {
			t.Fatalf("cleanup could not read the journal:\n%.2000s", c.Stderr)
		}
		unstaged := false
		for _, x := range calls(parseTrace(t, c)) {
			// The trace cuts a foreign string to a few KiB and says how
			// long it was: the handle's start and its full length.
			id, _ := x.Request["volume_id"].(string)
			if x.Method == "NodeUnstageVolume" && strings.HasPrefix(id, handle[:1024]) && strings.HasSuffix(id, fmt.Sprintf("(%d bytes, cut)", len(handle))) {
				unstaged = true
			}
		}
		if !unstaged {
			t.Errorf("kill before record %d: cleanup did not ask the driver to unstage the volume with its 1000 KiB handle:\n%.3000s", step, c.String())
		}
		return
	}
	t.Fatal("no journal ever held the handle")
}

// TestJournalKillDuringLoad: `load` mounts 20 staged pods side by side
// (records of many volumes interleaved); killed at spread-out journal
// steps, `cleanup` finishes each time with nothing left.
func TestJournalKillDuringLoad(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work)
	ep := "unix://" + drv.Sock
	tried := 0
	for _, step := range []int{7, 23, 61, 97, 131, 173, 211, 263, 307, 353} {
		root := filepath.Join(work, fmt.Sprintf("root-%03d", step))
		killed, r := jkRun(t, step, "load", "-f", sample(t, "staged"), "--replicas", "19", "--endpoint", ep, "--root-dir", root,
			"--node-name", simNode, "--volume-stats-agg-period", "0")
		if !killed {
			wantCode(t, r, 0)
			break
		}
		tried++
		c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
		if c.Code != 0 {
			t.Errorf("load killed before record %d: cleanup exit %d\n%.3000s", step, c.Code, c.String())
		}
		if left := jkLeft(root, work); len(left) > 0 {
			t.Errorf("load killed before record %d: left after cleanup: %v", step, left)
		}
	}
	if tried < 5 {
		t.Fatalf("only %d kill points inside the load", tried)
	}
	t.Logf("load of 20 staged pods killed at %d journal steps; cleanup finished every time", tried)
}
