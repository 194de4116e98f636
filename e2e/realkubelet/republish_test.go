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

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/callcompare"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

// sampleCaps are the reference driver's capabilities, as the samples have them.
var sampleCaps = []string{"STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS"}

// syncFrequency is the kubelet's (stack_test.go's KubeletConfiguration).
const syncFrequency = 10 * time.Second

// statsPeriod is the cadence test's volumeStatsAggPeriod (and the
// simulator's --volume-stats-agg-period).
const statsPeriod = 10 * time.Second

// earlyRepublish bounds the second NodePublishVolume: the first pod sync
// starts the containers and asks the PLEG for a relist of the pod
// (PLEGOnDemandRelist, 1.36+); the ContainerStarted events make a second
// pod sync, which republishes (+0.2-0.3s on the whole kubelet, at once on
// the simulator). Before 1.36 the PLEG's periodic relist (1s) does it.
const earlyRepublish = 2 * time.Second

// tickSlack is how late after a tick of the stats analyzer (a whole number
// of statsPeriods after the kubelet's start) a stats round may come: the
// analyzer starts a little after the process, and the machine is loaded.
const tickSlack = 3 * time.Second

// republishHold is how long the pod runs after its first NodePublishVolume.
const republishHold = 25 * time.Second

// TestRealKubeletRepublish is the running pod's cadence: the inline sample
// with requiresRepublish, held 25 s on the whole kubelet and on the
// simulator (--sync-frequency 10s --volume-stats-agg-period 10s --hold
// 25s). Compared as ranges, since both draw jitter:
//   - republish: one within earlyRepublish of the first publish on both,
//     then every syncFrequency plus up to 50% jitter (the pod worker's
//     resync, wait.Jitter(syncFrequency, 0.5)), as many on both as the
//     hold allows (3 or 4 NodePublishVolume in all);
//   - stats: the first round at a tick of the stats analyzer, a whole
//     number of periods after the kubelet's (the simulator's) start, then
//     1x to 2x a period apart (wait.JitterUntil(period, 1.0)), 1 to 3
//     rounds in the hold;
//   - the requests themselves: the same set of distinct calls.
func TestRealKubeletRepublish(t *testing.T) {
	if reexecInNamespace(t) {
		return
	}
	sim := simulator(t)
	s, drv, startup := setup(t, statsPeriod)
	ctx := s.ctx
	if err := drv.rec.SetNodeCapabilities(sampleCaps); err != nil {
		t.Fatal(err)
	}
	o := loadSample(t, "inline")
	yes := true
	o.driver.Spec.RequiresRepublish = &yes
	o.yaml = strings.Replace(o.yaml, "  podInfoOnMount: true\n", "  podInfoOnMount: true\n  requiresRepublish: true\n", 1)
	if !strings.Contains(o.yaml, "requiresRepublish: true") {
		t.Fatal("the inline sample changed: cannot add requiresRepublish")
	}
	o.create(ctx, t, s)

	mark := len(drv.rec.Calls())
	watch := watchCalls(ctx, drv.rec, mark)
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
	kubelet := watch()
	kubelet.started = s.kubeletStarted
	zero := int64(0)
	if err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	if _, err := drv.waitCount(ctx, mark, "NodeUnpublishVolume", 1, 60*time.Second); err != nil {
		t.Fatalf("no NodeUnpublishVolume: %v", err)
	}
	drv.settle(ctx, t)
	kubeletCalls := append(append([]recorder.Call{}, startup...), drv.rec.Calls()[mark:]...)
	t.Logf("whole kubelet, syncFrequency %s: NodePublishVolume at %s; volumeStatsAggPeriod %s: NodeGetVolumeStats at %s after the kubelet's start",
		syncFrequency, offsets(kubelet.publish), statsPeriod, since(s.kubeletStarted, kubelet.stats))

	simRun := runSimulatorHold(ctx, t, s, o, sim, string(pod.UID))
	t.Logf("csi-kubelet-sim --sync-frequency %s --volume-stats-agg-period %s --hold %s: NodePublishVolume at %s; NodeGetVolumeStats at %s after its start",
		syncFrequency, statsPeriod, republishHold, offsets(simRun.publish), since(simRun.started, simRun.stats))

	for _, side := range []struct {
		who string
		run cadence
	}{{"whole kubelet", kubelet}, {"csi-kubelet-sim", simRun}} {
		checkRepublish(t, side.who, side.run.publish)
		checkStats(t, side.who, side.run)
	}
	if d := compareSets(callcompare.NormalizeAll(kubeletCalls, kubeletRoot), callcompare.NormalizeAll(simRun.calls, filepath.Join(s.base, "sim-republish", "root"))); d != "" {
		t.Errorf("the whole kubelet and csi-kubelet-sim made different requests:\n%s", d)
	}
}

// cadence is when one side's driver got its republishes and stats rounds.
type cadence struct {
	started time.Time // the kubelet's (the simulator's) start
	publish []time.Time
	stats   []time.Time
	calls   []recorder.Call
}

// checkRepublish: the early republish (one or two: the whole kubelet at
// times syncs the pod once more within a second of the first sync, e.g.
// +0.19 s and +0.80 s, when the periodic relist sees the pod again; the
// simulator makes one), then each one syncFrequency to 1.5 syncFrequency
// after the one before (plus 1.5s for the pod sync's own work and a loaded
// machine), 3 to 5 NodePublishVolume in the hold.
func checkRepublish(t *testing.T, who string, times []time.Time) {
	early := 0
	for i := 1; i < len(times) && times[i].Sub(times[0]) <= earlyRepublish; i++ {
		early++
	}
	if early < 1 || early > 2 {
		t.Errorf("%s: %d republishes within %s of the first publish, want 1 or 2: %s", who, early, earlyRepublish, offsets(times))
	}
	lo, hi := syncFrequency-500*time.Millisecond, syncFrequency*3/2+1500*time.Millisecond
	for i := early + 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < lo || gap > hi {
			t.Errorf("%s: republish %d came %.1fs after the one before, not within [%s, %s]: %s", who, i, gap.Seconds(), lo, hi, offsets(times))
		}
	}
	if n := len(times) - early; n < 2 || n > 3 {
		t.Errorf("%s: %d NodePublishVolume in %s besides the early ones, want 2 or 3 (the first, 1 or 2 periodic): %s", who, n, republishHold, offsets(times))
	}
}

// checkStats: the first round at a tick of the stats analyzer (a whole
// number of periods after the start, and after the publish), then 1x to 2x
// a period apart, 1 to 3 rounds in the hold.
func checkStats(t *testing.T, who string, c cadence) {
	if len(c.stats) < 1 || len(c.stats) > 3 {
		t.Errorf("%s: %d NodeGetVolumeStats in %s, want 1 to 3: %s after the start", who, len(c.stats), republishHold, since(c.started, c.stats))
	}
	if len(c.stats) == 0 || len(c.publish) == 0 {
		return
	}
	first := c.stats[0].Sub(c.started)
	switch {
	case first < statsPeriod:
		t.Errorf("%s: the first stats round came %.1fs after the start, before the analyzer's first tick with a pod (%s)", who, first.Seconds(), statsPeriod)
	case c.stats[0].Sub(c.publish[0]) > statsPeriod+tickSlack:
		// The analyzer's tick fell between the pod's arrival and its mount,
		// found no mounted volume, and the calculator's next round is
		// 1x to 2x a period later (docs/kubelet.md §16).
		t.Logf("%s: the first stats round came %.1fs after the publish: a tick before the mount", who, c.stats[0].Sub(c.publish[0]).Seconds())
	case first%statsPeriod > tickSlack:
		t.Errorf("%s: the first stats round came %.1fs after the start, not at a tick of the analyzer (every %s from the start, +%s)", who, first.Seconds(), statsPeriod, tickSlack)
	}
	for i := 1; i < len(c.stats); i++ {
		if gap := c.stats[i].Sub(c.stats[i-1]); gap < statsPeriod-500*time.Millisecond || gap > 2*statsPeriod+1500*time.Millisecond {
			t.Errorf("%s: stats round %d came %.1fs after the one before, not 1x to 2x %s", who, i+1, gap.Seconds(), statsPeriod)
		}
	}
}

// compareSets compares the distinct requests of both sides, whatever their
// number and order (the cadence's counts are checked as ranges).
func compareSets(kubelet, sim []string) string {
	k, s := map[string]bool{}, map[string]bool{}
	for _, l := range kubelet {
		k[l] = true
	}
	for _, l := range sim {
		s[l] = true
	}
	var sb strings.Builder
	for l := range k {
		if !s[l] {
			fmt.Fprintf(&sb, "- kubelet only %s\n", l)
		}
	}
	for l := range s {
		if !k[l] {
			fmt.Fprintf(&sb, "+ sim only     %s\n", l)
		}
	}
	return sb.String()
}

func since(start time.Time, times []time.Time) string {
	if len(times) == 0 {
		return "(none)"
	}
	var parts []string
	for _, tm := range times {
		parts = append(parts, fmt.Sprintf("+%.2fs", tm.Sub(start).Seconds()))
	}
	return strings.Join(parts, " ")
}

// watchCalls notes when each NodePublishVolume and NodeGetVolumeStats
// after mark arrives (polled every 10ms); the function returned stops it
// and gives the times.
func watchCalls(ctx context.Context, rec *recorder.Recorder, mark int) func() cadence {
	var mu sync.Mutex
	var got cadence
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := mark
		for {
			calls := rec.Calls()
			mu.Lock()
			for ; seen < len(calls); seen++ {
				switch calls[seen].Short() {
				case "NodePublishVolume":
					got.publish = append(got.publish, time.Now())
				case "NodeGetVolumeStats":
					got.stats = append(got.stats, time.Now())
				}
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
	return func() cadence {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return cadence{publish: append([]time.Time(nil), got.publish...), stats: append([]time.Time(nil), got.stats...)}
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
// returns when its driver got each NodePublishVolume and NodeGetVolumeStats,
// and all its calls.
func runSimulatorHold(ctx context.Context, t *testing.T, s *stack, o objects, sim, uid string) cadence {
	dir := filepath.Join(s.base, "sim-republish")
	mkdirs(t, dir)
	manifest := filepath.Join(dir, "republish.yaml")
	writeFile(t, manifest, strings.ReplaceAll(o.yaml, string(o.pod.UID), uid))
	socket := filepath.Join(dir, "csi.sock")
	rec, err := recorder.Start(socket, recorderConfig(sampleCaps, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	watch := watchCalls(ctx, rec, 0)
	args := []string{"run", "--endpoint", "unix://" + socket, "--root-dir", filepath.Join(dir, "root"), "--node-name", nodeName,
		"--kubelet-version", kubeMinorVersion(), "--volume-stats-agg-period", statsPeriod.String(), "--selinux=false", "-o", "json",
		"--sync-frequency", syncFrequency.String(), "--hold", republishHold.String(), "-f", manifest}
	cctx, cancel := context.WithTimeout(ctx, republishHold+60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, sim, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	started := time.Now()
	runErr := cmd.Run()
	got := watch()
	got.started, got.calls = started, rec.Calls()
	if left := rec.Stop(); len(left) > 0 {
		t.Errorf("the simulator's driver had to release: %v", left)
	}
	if runErr != nil {
		t.Fatalf("%s %s: %v\n%s", sim, strings.Join(args, " "), runErr, out.String())
	}
	return got
}
