package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCleanupWithoutDriverBeforeMount: a run killed (kill -9) while the
// driver hung in its registration mounted nothing; its driver is gone.
// `cleanup` with the socket missing finishes it anyway (the journal lists
// nothing for the driver): exit 0, no journal, no root dir.
func TestCleanupWithoutDriverBeforeMount(t *testing.T) {
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work, "--fault", "GetPluginInfo=hang:60s")
	sim := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode)
	fltWaitLog(t, drv.Log, "call 1 of GetPluginInfo hangs for", 15*time.Second, sim.exited)
	_ = sim.cmd.Process.Signal(syscall.SIGKILL)
	<-sim.exited
	drv.Stop()
	_ = os.Remove(drv.Sock)
	if js, _ := filepath.Glob(filepath.Join(root, ".csi-kubelet-sim", "*.journal")); len(js) == 0 {
		t.Fatalf("the killed run left no journal: nothing to test")
	}
	r := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
	r.Stderr = withoutNotes(t, r.Stderr, "was locked by")
	wantCode(t, r, 0)
	if !strings.Contains(r.Stdout, "nothing the journals list needs it") {
		t.Errorf("cleanup does not say it went on without the driver:\n%s", r)
	}
	assertNothingLeft(t, root, work)
}

// TestCleanupWithoutDriverKeepsVolumes: a run killed with its volume
// mounted, its driver gone: `cleanup` without the socket touches no
// volume, exits 3 and names what needs the driver; the journal stays.
func TestCleanupWithoutDriverKeepsVolumes(t *testing.T) {
	work := fltWork(t)
	root := filepath.Join(work, "root")
	killedRun(t, work, root)
	before := mountsUnder(root)
	r := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+filepath.Join(work, "gone.sock"), "--node-name", simNode)
	r.Stderr = withoutNotes(t, r.Stderr, "was locked by")
	wantCode(t, r, 3)
	oneLineError(t, r, "what remains under "+root+" needs the driver: ", "globalmount", "start it and run cleanup again")
	if after := mountsUnder(root); len(after) != len(before) {
		t.Errorf("mounts before %v, after %v", before, after)
	}
	if js, _ := filepath.Glob(filepath.Join(root, ".csi-kubelet-sim", "*.journal")); len(js) == 0 {
		t.Errorf("the journal is gone")
	}
	drv := startRefDriver(t, work)
	again := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
	wantCode(t, again, 0)
	assertNothingLeft(t, root, work)
}

// TestAPIServerCleanupWithoutDriver: an --apiserver run killed while it
// waited for the driver's socket: `cleanup` with no driver removes the
// control plane's dir (its keys, etcd's data with the input's Secrets)
// and the run's directories, and exits 0.
func TestAPIServerCleanupWithoutDriver(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	root := filepath.Join(work, "root")
	sock := filepath.Join(work, "never.sock")
	sim := startSim(t, "run", "--apiserver", "-f", sample(t, "apiserver"), "--endpoint", sock, "--root-dir", root,
		"--node-name", simNode, "--driver-kubeconfig", filepath.Join(work, "driver.kubeconfig"), "--driver-wait", "5m")
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(sim.errb.String(), "waiting up to") {
		select {
		case <-sim.exited:
			t.Fatalf("exited before waiting for the driver\n%s", sim.wait(t, time.Second))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not waiting for the driver after 60s:\n%s", sim.errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = sim.cmd.Process.Kill()
	<-sim.exited
	deadline = time.Now().Add(10 * time.Second)
	for hasControlPlaneProcess(root) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(root, ".csi-kubelet-sim", "apiserver")); err != nil {
		t.Fatalf("no control plane dir left by the kill: %v", err)
	}
	r := runSim(t, "cleanup", "--root-dir", root, "--endpoint", sock, "--node-name", simNode)
	r.Stderr = withoutNotes(t, r.Stderr, "was locked by")
	wantCode(t, r, 0)
	if !strings.Contains(r.Stdout, "removed the control plane an interrupted --apiserver run left") {
		t.Errorf("cleanup does not say it removed the control plane:\n%s", r)
	}
	assertNoControlPlane(t, root)
	// The root dir itself stays when no journal says the run made it
	// (killed before it recorded anything): empty.
	if entries, err := os.ReadDir(root); err == nil && len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left in the root dir: %v", names)
	}
	if ms := mountsUnder(work); len(ms) > 0 {
		t.Errorf("still mounted: %v", ms)
	}
}
