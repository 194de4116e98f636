package realkubelet

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

// syncFrequency is the kubelet's (stack_test.go's KubeletConfiguration).
const syncFrequency = 10 * time.Second

// earlyRepublish bounds the whole kubelet's second NodePublishVolume: its
// first pod sync starts the containers and asks the PLEG for a relist of
// the pod (PLEGOnDemandRelist, 1.36+); the ContainerStarted events make a
// second pod sync, which republishes (+0.2-0.3s here). Before 1.36 the
// PLEG's periodic relist (1s) should do the same within about a second
// (not run here).
const earlyRepublish = 2 * time.Second

// republishHold is how long the pod runs after its first NodePublishVolume.
const republishHold = 25 * time.Second

// TestRealKubeletRepublish is the requiresRepublish cadence: the inline
// sample with requiresRepublish, held 25 s on the whole kubelet and on the
// simulator (--sync-frequency 10s --hold 25s). Both must republish every
// syncFrequency plus up to 50% jitter (the pod worker's resync,
// wait.Jitter(syncFrequency, 0.5)). The whole kubelet also republishes
// within earlyRepublish of its first publish; the test checks that and reports
// whether the simulator does too (issue 21: it does not yet; the test logs
// DIFFERS then, and passes: the simulator's node code is not changed here).
func TestRealKubeletRepublish(t *testing.T) {
	if reexecInNamespace(t) {
		return
	}
	sim := simulator(t)
	s, drv, _ := setup(t)
	ctx := s.ctx
	o := loadSample(t, "inline")
	yes := true
	o.driver.Spec.RequiresRepublish = &yes
	o.yaml = strings.Replace(o.yaml, "  podInfoOnMount: true\n", "  podInfoOnMount: true\n  requiresRepublish: true\n", 1)
	if !strings.Contains(o.yaml, "requiresRepublish: true") {
		t.Fatal("the inline sample changed: cannot add requiresRepublish")
	}
	o.create(ctx, t, s)

	mark := len(drv.rec.Calls())
	times := watchPublishes(ctx, drv.rec, mark)
	pod := o.pod.DeepCopy()
	pod.UID, pod.Spec.NodeName = "", nodeName
	pod, err := s.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Pod: %v", err)
	}
	if _, err := drv.waitCount(ctx, mark, "NodePublishVolume", 1, 60*time.Second); err != nil {
		t.Fatalf("no NodePublishVolume: %v\n%s", err, s.kubelet.tail(40))
	}
	time.Sleep(republishHold)
	zero := int64(0)
	if err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	if _, err := drv.waitCount(ctx, mark, "NodeUnpublishVolume", 1, 60*time.Second); err != nil {
		t.Fatalf("no NodeUnpublishVolume: %v", err)
	}
	kubelet := times()
	t.Logf("whole kubelet, syncFrequency %s: NodePublishVolume at %s", syncFrequency, offsets(kubelet))

	simTimes := runSimulatorHold(ctx, t, s, o, sim, string(pod.UID))
	t.Logf("csi-kubelet-sim --sync-frequency %s --hold %s: NodePublishVolume at %s", syncFrequency, republishHold, offsets(simTimes))

	if len(kubelet) < 2 || kubelet[1].Sub(kubelet[0]) > earlyRepublish {
		t.Errorf("the whole kubelet made no republish within %s of the first publish: %s", earlyRepublish, offsets(kubelet))
	}
	checkGaps(t, "whole kubelet", kubelet, 2)
	checkGaps(t, "csi-kubelet-sim", simTimes, 1)
	if len(kubelet) >= 2 && (len(simTimes) < 2 || simTimes[1].Sub(simTimes[0]) > earlyRepublish) {
		t.Logf("DIFFERS (issue 21, not fixed here): the simulator has no republish within %s of the first publish; the whole kubelet's came at +%.2fs", earlyRepublish, kubelet[1].Sub(kubelet[0]).Seconds())
	}
}

// checkGaps: from the from-th publish on, each republish comes
// syncFrequency to 1.5 syncFrequency after the one before (plus 1.5s for
// the pod sync's own work and a loaded machine), and there is at least one.
func checkGaps(t *testing.T, who string, times []time.Time, from int) {
	if len(times) <= from {
		t.Errorf("%s: no periodic republish in %s: %s", who, republishHold, offsets(times))
		return
	}
	lo, hi := syncFrequency-500*time.Millisecond, syncFrequency*3/2+1500*time.Millisecond
	for i := from; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < lo || gap > hi {
			t.Errorf("%s: republish %d came %.1fs after the one before, not within [%s, %s]: %s", who, i, gap.Seconds(), lo, hi, offsets(times))
		}
	}
}

// watchPublishes notes when each NodePublishVolume after mark arrives
// (polled every 10ms); the function returned stops it and gives the times.
func watchPublishes(ctx context.Context, rec *recorder.Recorder, mark int) func() []time.Time {
	var mu sync.Mutex
	var times []time.Time
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := 0
		for {
			n := 0
			for _, c := range rec.Calls()[mark:] {
				if c.Short() == "NodePublishVolume" {
					n++
				}
			}
			mu.Lock()
			for ; seen < n; seen++ {
				times = append(times, time.Now())
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() []time.Time {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), times...)
	}
}

func offsets(times []time.Time) string {
	if len(times) == 0 {
		return "(none)"
	}
	var parts []string
	for _, tm := range times {
		parts = append(parts, fmt.Sprintf("+%.2fs", tm.Sub(times[0]).Seconds()))
	}
	return strings.Join(parts, " ")
}

// runSimulatorHold runs the simulator on the objects with the pod held, and
// returns when its driver got each NodePublishVolume.
func runSimulatorHold(ctx context.Context, t *testing.T, s *stack, o objects, sim, uid string) []time.Time {
	dir := filepath.Join(s.base, "sim-republish")
	mkdirs(t, dir)
	manifest := filepath.Join(dir, "republish.yaml")
	writeFile(t, manifest, strings.ReplaceAll(o.yaml, string(o.pod.UID), uid))
	socket := filepath.Join(dir, "csi.sock")
	rec, err := recorder.Start(socket, recorderConfig(cases()[0].Caps, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	times := watchPublishes(ctx, rec, 0)
	args := []string{"run", "--endpoint", "unix://" + socket, "--root-dir", filepath.Join(dir, "root"), "--node-name", nodeName,
		"--kubelet-version", "1.37", "--volume-stats-agg-period", "0", "--selinux=false", "-o", "json",
		"--sync-frequency", syncFrequency.String(), "--hold", republishHold.String(), "-f", manifest}
	cctx, cancel := context.WithTimeout(ctx, republishHold+60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, sim, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	got := times()
	if left := rec.Stop(); len(left) > 0 {
		t.Errorf("the simulator's driver had to release: %v", left)
	}
	if runErr != nil {
		t.Fatalf("%s %s: %v\n%s", sim, strings.Join(args, " "), runErr, out.String())
	}
	return got
}
