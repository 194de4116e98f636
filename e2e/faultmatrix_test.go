package e2e

// The fault matrix of issue 9: every gRPC code that matters on each of the
// four node calls that mount and unmount, for a filesystem and a block
// volume, plus a call that hangs, a driver that crashes inside a call, a
// driver killed with SIGKILL while the pod runs, and a driver that answers
// OK to an unpublish or unstage but leaves the mount. Each scenario checks
// the documented exit code (1: the driver failed a call), that nothing of
// the simulator's own is left (no mount and no loop device under the root
// dir, the root dir gone) after the run or, where the run kept a volume
// whose teardown failed, after `cleanup` with a healthy driver, and that
// the report says whose each leftover is.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fmxOutcome is how a scenario is expected to end.
type fmxOutcome int

const (
	// fmxClean: the run leaves nothing of its own.
	fmxClean fmxOutcome = iota
	// fmxCleanup: the run keeps the volume (teardown failed), says so as
	// the simulator's, names `cleanup`, and cleanup finishes it.
	fmxCleanup
	// fmxDriverMount: the driver said OK but left its mount at a path the
	// simulator handed it; the simulator unmounts it and reports it as the
	// driver's.
	fmxDriverMount
)

type fmxScenario struct {
	kind   string // "fs" or "block"
	method string // the CSI method the fault is on; "" for kill -9
	fault  string // the --fault action, or "kill-9"
	want   fmxOutcome
}

func (s fmxScenario) name() string {
	if s.method == "" {
		return s.kind + "/driver-" + s.fault
	}
	return s.kind + "/" + s.method + "=" + strings.ReplaceAll(s.fault, ":", "-")
}

// fmxScenarios builds the matrix with each scenario's expected end, from
// docs/kubelet.md §12: a failed NodeStage or NodePublish is either final
// (what the kubelet made is removed) or uncertain (the teardown calls
// NodeUnstage/NodeUnpublish, which the driver answers): either way the run
// ends clean. A failed NodeUnpublish or NodeUnstage leaves the volume
// mounted as the kubelet would, and `cleanup` finishes it. A crash, and a
// SIGKILL of the driver, leave a teardown call that cannot reach the
// driver, so `cleanup` finishes those too.
func fmxScenarios() []fmxScenario {
	codes := []string{"Internal", "NotFound", "InvalidArgument", "FailedPrecondition",
		"DeadlineExceeded", "Unavailable", "Aborted", "ResourceExhausted"}
	var out []fmxScenario
	for _, kind := range []string{"fs", "block"} {
		for _, m := range []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"} {
			teardown := m == "NodeUnpublishVolume" || m == "NodeUnstageVolume"
			failed := fmxClean
			if teardown {
				failed = fmxCleanup
			}
			for _, c := range codes {
				out = append(out, fmxScenario{kind, m, c, failed})
			}
			// A hang past --timeout ends DeadlineExceeded.
			out = append(out, fmxScenario{kind, m, "hang:60s", failed})
			// A crash: the call and every later one cannot reach the
			// driver, so the teardown fails.
			out = append(out, fmxScenario{kind, m, "crash", fmxCleanup})
			if teardown {
				out = append(out, fmxScenario{kind, m, "skip", fmxDriverMount})
			}
		}
		out = append(out, fmxScenario{kind, "", "kill-9", fmxCleanup})
	}
	return out
}

// fmxLeft is the summary's left_behind.
type fmxLeft struct {
	Clean   bool     `json:"clean"`
	Mounts  []string `json:"mounts_unmounted"`
	Journal string   `json:"journal"`
	Left    []struct {
		Path, What, Owner, Why string
	} `json:"left"`
}

func fmxLeftBehind(tb testing.TB, lines []traceLine) fmxLeft {
	tb.Helper()
	var lb fmxLeft
	raw := summary(tb, lines).LeftBehind
	if len(raw) == 0 {
		tb.Fatalf("the summary has no left_behind")
	}
	if err := json.Unmarshal(raw, &lb); err != nil {
		tb.Fatalf("left_behind: %v", err)
	}
	return lb
}

// simOwnLeft lists what of the simulator's own is left under root: the
// root dir itself, mounts under it, loop devices backed by files under it.
func simOwnLeft(root string) []string {
	var out []string
	if fltExists(root) {
		_ = filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error {
			out = append(out, "path "+p)
			return nil
		})
	}
	for _, m := range mountsUnder(root) {
		out = append(out, "mount "+m)
	}
	for _, l := range fltLoopsUnder(root) {
		out = append(out, "loop "+l)
	}
	return out
}

// fmxTally counts how the scenarios ended.
type fmxTally struct {
	mu                       sync.Mutex
	tried, direct, byCleanup int
}

func (t *fmxTally) add(direct bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tried++
	if direct {
		t.direct++
	} else {
		t.byCleanup++
	}
}

func TestFaultMatrix(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir; mostly waiting on the driver
	scenarios := fmxScenarios()
	var tally fmxTally
	start := time.Now()
	t.Run("group", func(t *testing.T) {
		for _, sc := range scenarios {
			t.Run(sc.name(), func(t *testing.T) {
				t.Parallel()
				tally.add(runFaultScenario(t, sc))
			})
		}
	})
	t.Logf("fault matrix: %d scenarios tried, %d left clean by the run, %d finished by cleanup, in %v",
		tally.tried, tally.direct, tally.byCleanup, time.Since(start).Round(time.Second))
	if tally.tried != len(scenarios) {
		t.Errorf("%d of %d scenarios ran", tally.tried, len(scenarios))
	}
}

// runFaultScenario plays one scenario and tells whether the run itself
// left nothing of the simulator's (true) or cleanup was needed (false).
func runFaultScenario(t *testing.T, sc fmxScenario) bool {
	work := fltWork(t)
	root := filepath.Join(work, "root")
	var drvArgs []string
	if sc.method != "" {
		drvArgs = []string{"--fault", sc.method + "=" + sc.fault}
	}
	drv := fltStartRef(t, work, drvArgs...)
	manifest := sample(t, "staged")
	if sc.kind == "block" {
		manifest = sample(t, "block")
	}
	args := []string{"run", "-f", manifest, "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--max-attempts", "1", "--timeout", "1s", "-o", "json"}
	var r simResult
	if sc.fault == "kill-9" {
		// The driver is killed while the pod is held; the teardown at the
		// end of the hold cannot reach it.
		sim := startSim(t, append(args, "--hold", "2s", "--volume-stats-agg-period", "0")...)
		fltWaitMountedUnder(t, root, sc.kind, sim.exited)
		_ = drv.cmd.Process.Signal(syscall.SIGKILL)
		<-drv.exited
		r = sim.wait(t, 30*time.Second)
	} else {
		r = runSim(t, args...)
	}
	wantCode(t, r, 1)
	lines := parseTrace(t, r)
	lb := fmxLeftBehind(t, lines)
	names := strings.Contains(r.Stderr, "csi-kubelet-sim cleanup --root-dir "+root)

	var simOwned, driverOwned int
	for _, x := range lb.Left {
		switch x.Owner {
		case "the simulator's":
			simOwned++
		case "the driver's":
			driverOwned++
		default:
			t.Errorf("left_behind %s %s: owner %q, want the simulator's or the driver's (nothing else is under this root dir)", x.What, x.Path, x.Owner)
		}
	}
	if lb.Clean != (len(lb.Left) == 0 && len(lb.Mounts) == 0) {
		t.Errorf("left_behind.clean = %v, but left %v and mounts_unmounted %v", lb.Clean, lb.Left, lb.Mounts)
	}

	if sc.want == fmxDriverMount {
		// The driver said OK and left its mount: the run must not pass
		// for clean, and what is left is put down to the driver (its
		// mount unmounted at a path the simulator handed it, its file, or
		// the staging dir it did not empty).
		if lb.Clean {
			t.Errorf("the driver left its mount, but left_behind.clean is true")
		}
		staging := false
		for _, w := range fltWarnings(lines) {
			staging = staging || strings.Contains(w, "failed to remove staging path after NodeUnstageVolume()")
		}
		if len(lb.Mounts) == 0 && driverOwned == 0 && !staging {
			t.Errorf("nothing in the report is put down to the driver: left %+v, warnings %q", lb.Left, fltWarnings(lines))
		}
	}
	if sc.want == fmxClean || (sc.want == fmxDriverMount && !names) {
		if simOwned > 0 || names {
			t.Errorf("the run kept a volume for cleanup (left %+v); want the teardown to finish", lb.Left)
		}
		if left := simOwnLeft(root); len(left) > 0 {
			t.Errorf("the run left of its own: %v\n%s", left, r)
		}
		return true
	}

	// fmxCleanup: kept, the simulator's, cleanup named; then cleanup with a
	// healthy driver (the same data dir) finishes it.
	if simOwned == 0 && sc.want == fmxCleanup {
		t.Errorf("the teardown failed, but left_behind names nothing as the simulator's: %+v\n%s", lb.Left, r)
	}
	if !names {
		t.Errorf("the error does not name `csi-kubelet-sim cleanup --root-dir %s`:\n%s", root, r.Stderr)
	}
	if lb.Clean {
		t.Errorf("left_behind.clean is true while a volume is kept")
	}
	drv.Stop()
	_ = os.Remove(drv.Sock)
	drv2 := startRefDriver(t, work)
	c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv2.Sock, "--node-name", simNode, "-o", "json")
	if c.Code != 0 {
		t.Errorf("cleanup with a healthy driver: exit %d\n%s\nthe run before it:\n%s", c.Code, c, r)
	}
	cl := calls(parseTrace(t, c))
	if n := len(fltCallIdx(cl, "NodeUnpublishVolume")) + len(fltCallIdx(cl, "NodeUnstageVolume")); n == 0 {
		t.Errorf("cleanup made no NodeUnpublishVolume or NodeUnstageVolume: %v", methods(cl))
	}
	for _, x := range cl {
		if x.Code != "OK" {
			t.Errorf("cleanup: %s answered %s: %s", x.Method, x.Code, x.Error)
		}
	}
	if left := simOwnLeft(root); len(left) > 0 {
		t.Errorf("after cleanup, left of the simulator's own: %v\n%s", left, c)
	}
	return false
}

// fltWaitMountedUnder waits until the pod's volume is in use: the publish
// target of the staged sample is mounted, or (block) the kubelet's loop
// device lock over the global map file exists.
func fltWaitMountedUnder(t *testing.T, root, kind string, exited <-chan struct{}) {
	t.Helper()
	if kind == "fs" {
		waitMounted(t, targetPath(root, stagedUID, semPV), 15*time.Second, exited)
		return
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(fltLoopsUnder(root)) == 0 {
		select {
		case <-exited:
			t.Fatalf("the simulator exited before the block volume was mapped")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no loop device backed under %s after 15s", root)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
