package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// The running pod's timers: pod syncs at wait.Jitter(syncFrequency, 0.5)
// or a fixed republish period; the stats calculator's first round at the
// fs resource analyzer's next tick, then wait.JitterUntil(period, 1.0).
func TestRunningScheduleJitter(t *testing.T) {
	s := volumemanager.RunningSchedule{SyncFrequency: time.Minute, StatsPeriod: 10 * time.Second}
	for range 200 {
		if d := s.NextSync(); d < time.Minute || d > 90*time.Second {
			t.Fatalf("nextSync %v, want 1m to 1m30s", d)
		}
		if d := s.NextStats(); d < 10*time.Second || d > 20*time.Second {
			t.Fatalf("nextStats %v, want 10s to 20s", d)
		}
	}
	// The first stats round: the fs resource analyzer's next tick, a
	// whole number of periods after the kubelet's start.
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ since, want time.Duration }{
		{0, 10 * time.Second},
		{300 * time.Millisecond, 9700 * time.Millisecond},
		{10 * time.Second, 10 * time.Second},
		{23 * time.Second, 7 * time.Second},
		{-time.Second, 10 * time.Second},
	} {
		if d := s.FirstStats(start, start.Add(tc.since)); d != tc.want {
			t.Errorf("firstStats %v after the start = %v, want %v", tc.since, d, tc.want)
		}
	}
	if d := (volumemanager.RunningSchedule{SyncFrequency: time.Minute, RepublishPeriod: 3 * time.Second}).NextSync(); d != 3*time.Second {
		t.Errorf("nextSync with a republish period = %v, want 3s", d)
	}
}

// A running pod of a driver with requiresRepublish and GET_VOLUME_STATS:
// republishes and stats rounds on their own timers, numbered, counted in
// the report with the first failures; nothing at all for d == 0.
func TestRunPod(t *testing.T) {
	e := newEnv(t, docs(republishDriver("attachRequired: false"), pv1, pvc1, pod1),
		newFakeDriver(capStage, csi.NodeServiceCapability_RPC_GET_VOLUME_STATS))
	e.mountOK("app-1")
	e.drv.ClearCalls()
	var rep volumemanager.RunningReport
	sched := volumemanager.RunningSchedule{RepublishPeriod: 40 * time.Millisecond, StatsPeriod: 40 * time.Millisecond}
	e.k.vm.RunPod(context.Background(), e.pod("app-1"), 0, sched, &rep)
	if len(e.drv.Calls()) != 0 {
		t.Fatalf("RunPod for 0: calls %q", seq(e.drv.Calls()))
	}
	e.drv.FailNext("NodePublishVolume", codes.Internal, 1)
	e.k.vm.RunPod(context.Background(), e.pod("app-1"), 300*time.Millisecond, sched, &rep)
	got := rep.Snapshot()
	// The first sync is the early one of PLEGOnDemandRelist (1.37): at once.
	if !got.Republish || got.FirstSync != 0 || got.Syncs < 2 || got.Stats < 1 {
		t.Errorf("report: republish %t, first sync %v, %d syncs, %d stats rounds; want republish, 0s, 2+, 1+",
			got.Republish, got.FirstSync, got.Syncs, got.Stats)
	}
	if got.RepublishFailed != 1 || len(got.Errs) != 1 || !strings.Contains(got.Errs[0].Error(), "csifake: injected Internal") {
		t.Errorf("failures %d %v, want the one injected", got.RepublishFailed, got.Errs)
	}
	ops := map[string]bool{}
	for _, c := range e.drv.Calls() {
		ops[c.Labels.Operation+":"+c.Method] = true
	}
	for _, want := range []string{"SetUp#1:NodePublishVolume", "SetUp#2:NodePublishVolume", "GetMetrics#1:NodeGetVolumeStats"} {
		if !ops[want] {
			t.Errorf("no %s among %v", want, ops)
		}
	}
	// A cancelled context ends a pod kept until then (d < 0).
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	e.k.vm.RunPod(ctx, e.pod("app-1"), -1, sched, &rep)
	// A pod kept until its context would otherwise run on for good: the
	// bound only has to be finite, and far above what load adds.
	if time.Since(start) > 30*time.Second {
		t.Errorf("RunPod(-1) did not end with its context")
	}
	e.unmountOK("app-1")
}

// The pod's second sync follows its first (the containers' start seen by
// the PLEG): one republish right after the first publish, long before the
// sync period, with a note saying why: at once with PLEGOnDemandRelist
// (1.36 on, 1.37 locked), within the periodic relist's second before or
// with the gate off.
func TestRunPodEarlySync(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opt      func(t *testing.T) envOption
		onDemand bool
	}{
		{"1.37", func(t *testing.T) envOption { return withVersion(37) }, true},
		{"1.36", func(t *testing.T) envOption { return withVersion(36) }, true},
		{"1.36-gate-off", func(t *testing.T) envOption { return withGates(t, 36, "PLEGOnDemandRelist=false") }, false},
		{"1.35", func(t *testing.T) envOption { return withVersion(35) }, false},
		{"1.30", func(t *testing.T) envOption { return withVersion(30) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, docs(republishDriver("attachRequired: false"), pv1, pvc1, pod1), newFakeDriver(capStage), tc.opt(t))
			d, why := e.k.vm.EarlySync()
			if tc.onDemand && (d != 0 || !strings.Contains(why, "PLEGOnDemandRelist")) {
				t.Errorf("earlySync %v %q, want 0 and PLEGOnDemandRelist", d, why)
			}
			if !tc.onDemand && (d < 0 || d >= time.Second || !strings.Contains(why, "periodic relist")) {
				t.Errorf("earlySync %v %q, want under 1s and the periodic relist", d, why)
			}
			e.mountOK("app-1")
			e.drv.ClearCalls()
			var rep volumemanager.RunningReport
			e.k.vm.RunPod(context.Background(), e.pod("app-1"), 3*time.Second, volumemanager.RunningSchedule{SyncFrequency: time.Hour}, &rep)
			var pubs []string
			for _, c := range e.drv.Calls() {
				if c.Method == "NodePublishVolume" {
					pubs = append(pubs, c.Labels.Operation)
				}
			}
			if len(pubs) != 1 || pubs[0] != "SetUp#1" || rep.Snapshot().Syncs != 1 {
				t.Errorf("republishes %v, %d syncs; want one, SetUp#1", pubs, rep.Snapshot().Syncs)
			}
			if !traceHas(e.trace, why) {
				t.Errorf("trace does not say why the pod was synced again (%q)", why)
			}
			e.unmountOK("app-1")
		})
	}
}

func traceHas(tr *csiclient.Trace, text string) bool {
	for _, s := range tr.Steps() {
		if s.Text == text {
			return true
		}
	}
	return false
}

// The first stats round comes at the fs resource analyzer's first tick
// after the pod arrived: one period after the kubelet's start for a pod
// that arrives at once, never earlier (a whole kubelet started with its pod
// made no round in the first period).
func TestRunPodFirstStatsRound(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage, csi.NodeServiceCapability_RPC_GET_VOLUME_STATS))
	e.mountOK("app-1")
	e.drv.ClearCalls()
	var rep volumemanager.RunningReport
	e.k.vm.RunPod(context.Background(), e.pod("app-1"), 1500*time.Millisecond, volumemanager.RunningSchedule{StatsPeriod: time.Second}, &rep)
	var first time.Time
	for _, c := range e.trace.Calls() {
		if c.Method == "NodeGetVolumeStats" {
			first = c.Start
			break
		}
	}
	if first.IsZero() || rep.Snapshot().Stats != 1 {
		t.Fatalf("%d stats rounds, want 1 at one period after the kubelet's start", rep.Snapshot().Stats)
	}
	if d := first.Sub(e.k.vm.Started); d < time.Second {
		t.Errorf("first NodeGetVolumeStats %v after the kubelet's start, want one period (1s) or more", d)
	}
	e.unmountOK("app-1")
}
