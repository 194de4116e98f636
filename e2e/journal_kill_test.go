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
	for _, name := range []string{"staged", "block"} {
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
