package realkubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/difftable"
)

// startKubelet starts the kubelet with gates as its --feature-gates ("":
// the release's defaults) and waits until it serves /healthz and its Node
// is Ready. The stack's cleanup stops the kubelet running then
// (startStack).
func (s *stack) startKubelet(ctx context.Context, t *testing.T, gates string) {
	args := append([]string{}, s.kubeletFlags...)
	if gates != "" {
		args = append(args, "--feature-gates", gates)
	}
	// A log per start: a restarted kubelet's would truncate the first.
	name := "kubelet"
	if s.starts > 0 {
		name = fmt.Sprintf("kubelet-%d", s.starts+1)
	}
	s.starts++
	// From an empty directory of its own: with the fake runtime the
	// kubelet removes entries of its working directory when a container
	// is removed (an empty log path).
	s.kubeletStarted = time.Now()
	s.kubelet = launch(t, s.logs, name, filepath.Join(s.base, "kubelet-cwd"), s.kubeletBin, args...)
	s.gates = gates
	d, err := waitFor(ctx, s.kubelet, "kubelet /healthz", 60*time.Second, httpOK(s.healthz, "", "ok"))
	if err != nil {
		t.Fatal(err)
	}
	s.timed("kubelet healthz", d)
	d, err = waitFor(ctx, s.kubelet, "Node Ready", 60*time.Second, s.nodeReady)
	if err != nil {
		t.Fatal(err)
	}
	s.timed("Node Ready", d)
}

// restartKubelet stops the kubelet and starts it with gates, then waits
// until its plugin watcher registered the driver again (the registration
// socket stays). The driver's calls of that registration (NodeGetInfo)
// fall between two cases.
func (s *stack) restartKubelet(ctx context.Context, t *testing.T, gates string) {
	start := time.Now()
	s.kubelet.stop(t)
	s.reg.reset()
	s.startKubelet(ctx, t, gates)
	if _, err := waitFor(ctx, s.kubelet, "driver registered again", 60*time.Second, s.reg.registered); err != nil {
		t.Fatal(err)
	}
	t.Logf("kubelet restarted with --feature-gates %q in %.1fs", gates, time.Since(start).Seconds())
}

// byGates orders cases so that those with the same kubelet gates follow
// each other (the release's defaults first): the kubelet restarts once per
// set of gates, not once per case. Otherwise the table's order stays.
func byGates(cases []difftable.Case) {
	sort.SliceStable(cases, func(i, j int) bool {
		gi, gj := cases[i].Gates, cases[j].Gates
		if (gi == "") != (gj == "") {
			return gi == ""
		}
		return gi < gj
	})
}

// clearStuck is what an administrator does on a node whose kubelet keeps
// retrying a teardown that cannot complete: the kubelet stopped, the
// kubelet's mounts and loop devices under its root released, the pods'
// and the CSI plugin's directories removed, what the driver holds
// released, and the kubelet started again (with the same gates). All of
// it is under the test's temp dir, in the test's mount namespace.
func (s *stack) clearStuck(ctx context.Context, t *testing.T, drv *driver) {
	s.kubelet.stop(t)
	for _, r := range drv.rec.Release() {
		t.Logf("after the stuck teardown: %s", r)
	}
	releaseUnder(t, kubeletRoot)
	for _, dir := range []string{"pods", "plugins/kubernetes.io/csi"} {
		entries, _ := os.ReadDir(filepath.Join(kubeletRoot, dir))
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(kubeletRoot, dir, e.Name())); err != nil {
				t.Errorf("after the stuck teardown: %v", err)
			}
		}
	}
	s.restartKubelet(ctx, t, s.gates)
}
