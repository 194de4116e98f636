package realkubelet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/difftable"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

const (
	samplesDir = "../../fixtures/samples"
	driverName = "ref.csi.kubelet-sim.io"
)

// cases are the differential test's (e2e/kubeletdiff/difftable: every
// sample but webhook and provision, then its table) that apply to this
// release.
func cases(t *testing.T) []difftable.Case {
	all, err := difftable.Cases(samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []difftable.Case
	for _, c := range all {
		if c.Applies(kubeMinor()) {
			out = append(out, c)
		}
	}
	return out
}

// notWhole says why a case of the table does not run through the whole
// kubelet here, or "" when it does.
func notWhole(c difftable.Case) string {
	if c.SELinuxLevel != "" && hostSELinux() {
		return "this host has SELinux: the whole kubelet's context= options would come from the host's policy and allocated levels, which the case does not fix; the test compares SELinux cases on hosts without it"
	}
	return ""
}

// hostSELinux tells whether this kernel has SELinux (selinuxfs), which the
// kubelet looks for to decide whether it mounts with context= at all.
func hostSELinux() bool {
	b, err := os.ReadFile("/proc/filesystems")
	return err == nil && strings.Contains(string(b), "selinuxfs")
}

// TestRealKubelet starts a whole kubelet (with its API server, etcd and the
// fake container runtime) in a mount namespace of its own, registers a
// recording driver with it through the plugin watcher, and runs every case:
// its objects created through the API, the pod's NodePublishVolume waited
// for, the pod deleted (grace 0), the teardown waited for. The same objects
// (with the server's pod UID) go to `csi-kubelet-sim run` against a second
// recording driver, and the two streams of requests must be the same, call
// for call (root dirs, tokens and their expiry by shape). A case with
// kubelet feature gates gets a kubelet restarted with them (the cases are
// ordered by their gates); a case whose teardown never completes on a
// kubelet is cleared after it as an administrator would (clearStuck).
func TestRealKubelet(t *testing.T) {
	if reexecInNamespace(t) {
		return
	}
	sim := simulator(t)
	s, drv, startup := setup(t, 0)
	out := os.Getenv("REALKUBELET_OUT")
	all := cases(t)
	byGates(all)
	for _, c := range all {
		t.Run(c.Name, func(t *testing.T) {
			if why := notWhole(c); why != "" {
				t.Skip(why)
			}
			runCase(s.ctx, t, s, drv, c, sim, startup, out)
		})
	}
}

// setup starts the stack in this mount namespace with the recording driver
// registered, and returns the driver's calls of the registration. The
// kubelet collects volume stats every statsPeriod (0: never).
func setup(t *testing.T, statsPeriod time.Duration) (*stack, *driver, []recorder.Call) {
	base, err := os.MkdirTemp("", "realkubelet-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// After every other cleanup (registered later, run earlier):
		// nothing attached or mounted under base, then base removed.
		releaseLoops(t, base)
		for _, m := range mountsUnder(base) {
			t.Errorf("left mounted: %s", m)
		}
		if err := os.RemoveAll(base); err != nil {
			t.Errorf("remove %s: %v", base, err)
		}
	})
	protectHost(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)

	drv := startDriver(t, base)
	s := startStack(ctx, t, base, statsPeriod)
	start := time.Now()
	s.reg = startRegistrar(ctx, t, drv.socket)
	if _, err := waitFor(ctx, s.kubelet, "driver registered", 60*time.Second, s.reg.registered); err != nil {
		t.Fatal(err)
	}
	if _, err := waitFor(ctx, s.kubelet, "CSINode lists the driver", 60*time.Second, s.csiNodeHas(driverName)); err != nil {
		t.Fatal(err)
	}
	s.timed("driver registered, in CSINode", time.Since(start))
	t.Logf("start-up: %s", strings.Join(s.times, ", "))
	drv.settle(ctx, t)
	startup := drv.rec.Calls()

	s.ctx = ctx
	t.Cleanup(func() {
		if s.driver != nil {
			s.deleteDriver(t)
		}
	})
	return s, drv, startup
}

// simulator is the built csi-kubelet-sim.
func simulator(t *testing.T) string {
	bin := os.Getenv("CSI_KUBELET_SIM")
	if bin == "" {
		bin = "../../bin/csi-kubelet-sim"
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the simulator binary %s: %v (run `make build`, or set CSI_KUBELET_SIM)", bin, err)
	}
	return bin
}

// writeStreams keeps both streams of a case in dir (REALKUBELET_OUT).
func writeStreams(t *testing.T, dir, name string, kubelet, sim []string) {
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for side, lines := range map[string][]string{"kubelet": kubelet, "sim": sim} {
		p := filepath.Join(dir, name+"."+side+".jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// driver is the recording driver the whole kubelet talks to, on one socket
// for the whole test (the kubelet registers it once).
type driver struct {
	socket string
	images string // its BlockDir
	rec    *recorder.Recorder
}

func startDriver(t *testing.T, base string) *driver {
	d := &driver{socket: filepath.Join(base, "csi.sock"), images: filepath.Join(base, "images")}
	mkdirs(t, d.images)
	rec, err := recorder.Start(d.socket, recorderConfig(nil, d.images), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.rec = rec
	t.Cleanup(func() {
		if left := rec.Stop(); len(left) > 0 {
			t.Errorf("the driver had to release: %v", left)
		}
	})
	return d
}

// recorderConfig is the driver's: with images, a block volume is a loop
// device over a sparse file there, bind-mounted on the publish target.
func recorderConfig(caps []string, images string) recorder.Config {
	return recorder.Config{DriverName: driverName, VendorVersion: "0.0.1", NodeID: nodeName, NodeCapabilities: caps, BlockDir: images}
}

// settle waits until the driver got no call for a second.
func (d *driver) settle(ctx context.Context, t *testing.T) { d.settleFor(ctx, t, time.Second) }

// settleFor waits until the driver got no call for quiet.
func (d *driver) settleFor(ctx context.Context, t *testing.T, quiet time.Duration) {
	n, since := len(d.rec.Calls()), time.Now()
	for time.Since(since) < quiet {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if m := len(d.rec.Calls()); m != n {
			n, since = m, time.Now()
		}
	}
}

// waitCount waits until the driver got at least n calls of method (short
// name) since mark, and returns how long it took.
func (d *driver) waitCount(ctx context.Context, mark int, method string, n int, timeout time.Duration) (time.Duration, error) {
	return waitFor(ctx, nil, method, timeout, func(context.Context) error {
		got := 0
		for _, c := range d.rec.Calls()[mark:] {
			if c.Short() == method {
				got++
			}
		}
		if got >= n {
			return nil
		}
		return errNotYet
	})
}
