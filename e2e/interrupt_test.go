package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/fixtures/webhook"
)

// startHangingWebhook serves a webhook that answers nothing until the
// test ends; arrived is told of each request.
func startHangingWebhook(t *testing.T) (addr string, ca *webhook.CA, arrived <-chan struct{}) {
	t.Helper()
	ca, err := webhook.NewCA("volume-injector.webhooks.svc")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan struct{}, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-ctx.Done():
		}
	})
	addr, done, err := webhook.Serve(ctx, "127.0.0.1:0", ca, mux)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
	return addr, ca, got
}

// childPIDs are the processes pid started (the admission helper).
func childPIDs(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		for _, s := range strings.Fields(readFile(f)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive tells whether a process exists and is not a zombie.
func alive(pid int) bool {
	stat := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if stat == "" {
		return false
	}
	if i := strings.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// TestInterruptDuringAdmission: Ctrl-C while a webhook hangs ends run,
// plan and load at once with exit 130 and a message naming the admission
// of the pod, instead of waiting out the webhook's 30 s timeout; the
// admission helper is gone and no root dir was made.
func TestInterruptDuringAdmission(t *testing.T) {
	addr, ca, arrived := startHangingWebhook(t)
	manifest := strings.Replace(webhookManifests(ca.PEM, "Fail", "/hang"), "    failurePolicy: Fail\n", "    failurePolicy: Fail\n    timeoutSeconds: 30\n", 1)
	for _, command := range []string{"run", "plan", "load"} {
		t.Run(command, func(t *testing.T) {
			work := workDir(t)
			file := writeFile(t, work, "pod.yaml", manifest)
			root := filepath.Join(work, "root")
			args := []string{command, "-f", file, "--root-dir", root, "--node-name", simNode, "--webhook-service", "webhooks/volume-injector=" + addr}
			if command != "plan" {
				args = append(args, "--endpoint", "unix://"+filepath.Join(work, "none.sock"))
			}
			sim := startSim(t, args...)
			select {
			case <-arrived:
			case <-sim.exited:
				t.Fatalf("ended before the webhook was called\n%s", sim.wait(t, time.Second))
			case <-time.After(20 * time.Second):
				t.Fatal("the webhook was never called")
			}
			helpers := childPIDs(sim.cmd.Process.Pid)
			if len(helpers) == 0 {
				t.Fatal("no admission helper under the simulator")
			}
			if err := sim.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			// Well under the webhook's 30 s timeout: the signal was seen.
			r := sim.wait(t, 15*time.Second)
			wantCode(t, r, 130)
			oneLineError(t, r, "interrupted during the admission of Pod shop/checkout")
			for _, pid := range helpers {
				if alive(pid) {
					t.Errorf("admission helper %d still running", pid)
				}
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("root dir %s made (%v)", root, err)
			}
		})
	}
}

// startSimInGroup starts the simulator as the leader of a process group
// of its own, as a shell or GNU timeout runs a command, so that the test
// can signal the whole group.
func startSimInGroup(tb testing.TB, args ...string) *bgSim {
	tb.Helper()
	return startSimWith(tb, &syscall.SysProcAttr{Setpgid: true}, args...)
}

// TestGroupSignalCountsOnce: SIGTERM sent to the process and then to its
// group a few milliseconds later, as GNU timeout and CI runners do, is one
// interrupt: the teardown (slowed by the driver, 300 ms a call) is not
// abandoned; all 24 pods' volumes are unpublished and unstaged, nothing
// is left and the run exits 130.
func TestGroupSignalCountsOnce(t *testing.T) {
	const pods = 24
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work, "--fault", "NodeUnpublishVolume=hang:300ms", "--fault", "NodeUnstageVolume=hang:300ms")
	sim := startSimInGroup(t, "load", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--replicas", strconv.Itoa(pods-1), "--hold", "1h", "--volume-stats-agg-period", "0", "-o", "json", "-v")
	deadline := time.Now().Add(60 * time.Second)
	for len(mountsUnder(root)) < 2*pods {
		select {
		case <-sim.exited:
			t.Fatalf("ended before the pods were mounted\n%s", sim.wait(t, time.Second))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d mounts under the root dir after 60s, want %d", len(mountsUnder(root)), 2*pods)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pid := sim.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Millisecond)
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := sim.wait(t, 60*time.Second)
	wantCode(t, r, 130)
	msg := oneLineError(t, r, "interrupted")
	if strings.Contains(msg, "left") || strings.Contains(msg, "cleanup") {
		t.Errorf("the teardown was abandoned: %.300s...", msg)
	}
	var unpublished, unstaged int
	for _, c := range calls(parseTrace(t, r)) {
		switch {
		case c.Method == "NodeUnpublishVolume" && c.Code == "OK":
			unpublished++
		case c.Method == "NodeUnstageVolume" && c.Code == "OK":
			unstaged++
		}
	}
	if unpublished != pods || unstaged != pods {
		t.Errorf("%d NodeUnpublishVolume and %d NodeUnstageVolume OK, want %d each", unpublished, unstaged, pods)
	}
	assertNothingLeft(t, root, work)
}

// TestTimeoutCommand: `timeout -s TERM` (GNU coreutils) around a run held
// forever, whose teardown the driver slows: one interrupt, a full
// teardown, exit 130 and nothing left.
func TestTimeoutCommand(t *testing.T) {
	timeoutBin, err := exec.LookPath("timeout")
	if err != nil {
		t.Skip("no timeout command")
	}
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work, "--fault", "NodeUnpublishVolume=hang:500ms")
	cmd := exec.Command(timeoutBin, "--preserve-status", "-s", "TERM", "4s", simBin(t), "run", "-f", sample(t, "staged"),
		"--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "--hold", "forever", "--volume-stats-agg-period", "0")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	r := simResult{Args: cmd.Args, Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.Code = ee.ExitCode()
	}
	wantCode(t, r, 130)
	msg := oneLineError(t, r, "interrupted")
	if strings.Contains(msg, "cleanup") {
		t.Errorf("the teardown was abandoned: %.300s...", msg)
	}
	if !strings.Contains(r.Stdout, "NodeUnstageVolume") {
		t.Errorf("no NodeUnstageVolume in the trace\n%s", r)
	}
	assertNothingLeft(t, root, work)
}

// TestInterruptDuringRegistration: Ctrl-C while the driver hangs in
// GetPluginInfo is an interrupt (130, naming the registration), not an
// unreachable driver (3) or a failed one (1); nothing is left.
func TestInterruptDuringRegistration(t *testing.T) {
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work, "--fault", "GetPluginInfo=hang:60s")
	sim := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode)
	fltWaitLog(t, drv.Log, "call 1 of GetPluginInfo hangs for", 15*time.Second, sim.exited)
	if err := sim.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := sim.wait(t, 15*time.Second)
	wantCode(t, r, 130)
	oneLineError(t, r, "interrupted during the driver's registration")
	assertNothingLeft(t, root, work)
}

// killedRun leaves a staged volume mounted under root, as a kill -9 of a
// run does; the driver is stopped afterwards.
func killedRun(t *testing.T, work, root string) {
	t.Helper()
	drv := fltStartRef(t, work)
	sim := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--hold", "forever", "--volume-stats-agg-period", "0")
	rcvWaitInUse(t, root, "staged", sim.exited)
	_ = sim.cmd.Process.Signal(syscall.SIGKILL)
	<-sim.exited
	drv.Stop()
	_ = os.Remove(drv.Sock)
}

// TestInterruptDuringCleanup: `cleanup` whose NodeUnpublishVolume hangs,
// interrupted: exit 130 saying the cleanup was interrupted and what is
// left, not that the driver failed; a second `cleanup` finishes.
func TestInterruptDuringCleanup(t *testing.T) {
	work := fltWork(t)
	root := filepath.Join(work, "root")
	killedRun(t, work, root)
	drv := startRefDriver(t, work, "--fault", "NodeUnpublishVolume=hang:60s")
	ep := "unix://" + drv.Sock
	c := startSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
	fltWaitLog(t, drv.Log, "call 1 of NodeUnpublishVolume hangs for", 15*time.Second, c.exited)
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := c.wait(t, 15*time.Second)
	wantCode(t, r, 130)
	// The run was killed with its lock held: cleanup first notes that it
	// took the lock over (a line of its own), then the one-line error.
	r.Stderr = withoutNotes(t, r.Stderr, "was locked by")
	msg := oneLineError(t, r, "cleanup interrupted", "csi-kubelet-sim cleanup --root-dir "+root)
	if strings.Contains(msg, "driver answered") || strings.Contains(msg, "driver failed") {
		t.Errorf("an interrupted cleanup blames the driver: %s", msg)
	}
	drv.Stop()
	_ = os.Remove(drv.Sock)
	drv2 := startRefDriver(t, work)
	again := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv2.Sock, "--node-name", simNode)
	wantCode(t, again, 0)
	if ms := mountsUnder(work); len(ms) > 0 {
		t.Errorf("still mounted after the second cleanup: %v", ms)
	}
}

// TestConformanceSecondSignal: a scenario's NodeUnpublishVolume hangs
// 40 s. The first Ctrl-C lets the teardown go on; the second, a second
// later, abandons it: exit 130 at once, naming the `cleanup` command,
// which then finishes with a healthy driver.
func TestConformanceSecondSignal(t *testing.T) {
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work, "--fault", "NodeUnpublishVolume=hang:40s")
	sim := startSim(t, "conformance", "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"--focus", "^lifecycle/persistent$", "-o", "json")
	fltWaitLog(t, drv.Log, "call 1 of NodeUnpublishVolume hangs for", 30*time.Second, sim.exited)
	first := time.Now()
	if err := sim.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(first.Add(1200 * time.Millisecond)))
	select {
	case <-sim.exited:
		t.Fatalf("the first Ctrl-C abandoned the teardown\n%s", sim.wait(t, time.Second))
	default:
	}
	if err := sim.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// Far under the 40 s hang: the second signal was seen.
	r := sim.wait(t, 15*time.Second)
	wantCode(t, r, 130)
	oneLineError(t, r, "abandoned", "csi-kubelet-sim cleanup --root-dir "+root)

	drv.Stop()
	_ = os.Remove(drv.Sock)
	drv2 := startRefDriver(t, work)
	c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv2.Sock, "--node-name", simNode)
	wantCode(t, c, 0)
	if ms := mountsUnder(work); len(ms) > 0 {
		t.Errorf("still mounted after cleanup: %v\n%s", ms, c)
	}
	// The scenario's root dir went with what was in it.
	if left, _ := filepath.Glob(filepath.Join(root, "*")); len(left) > 0 {
		t.Errorf("left under the conformance root dir after cleanup: %v", left)
	}
}

// withoutNotes drops the "note: " lines of stderr, each of which must
// mention want.
func withoutNotes(t *testing.T, stderr, want string) string {
	t.Helper()
	var kept []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if strings.HasPrefix(l, "note: ") {
			if !strings.Contains(l, want) {
				t.Errorf("unexpected note on stderr: %q", l)
			}
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "")
}
