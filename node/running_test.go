package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// The running pod's timers: pod syncs at wait.Jitter(syncFrequency, 0.5)
// or a fixed republish period; the stats calculator's first round within
// one period, then wait.JitterUntil(period, 1.0).
func TestRunningScheduleJitter(t *testing.T) {
	s := RunningSchedule{SyncFrequency: time.Minute, StatsPeriod: 10 * time.Second}
	for range 200 {
		if d := s.nextSync(); d < time.Minute || d > 90*time.Second {
			t.Fatalf("nextSync %v, want 1m to 1m30s", d)
		}
		if d := s.firstStats(); d < 0 || d >= 10*time.Second {
			t.Fatalf("firstStats %v, want 0 to 10s", d)
		}
		if d := s.nextStats(); d < 10*time.Second || d > 20*time.Second {
			t.Fatalf("nextStats %v, want 10s to 20s", d)
		}
	}
	if d := (RunningSchedule{SyncFrequency: time.Minute, RepublishPeriod: 3 * time.Second}).nextSync(); d != 3*time.Second {
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
	var rep RunningReport
	sched := RunningSchedule{RepublishPeriod: 40 * time.Millisecond, StatsPeriod: 40 * time.Millisecond}
	e.k.runPod(context.Background(), e.pod("app-1"), 0, sched, &rep)
	if len(e.drv.Calls()) != 0 {
		t.Fatalf("RunPod for 0: calls %q", seq(e.drv.Calls()))
	}
	e.drv.FailNext("NodePublishVolume", codes.Internal, 1)
	e.k.runPod(context.Background(), e.pod("app-1"), 300*time.Millisecond, sched, &rep)
	got := rep.Snapshot()
	if !got.Republish || got.FirstSync != 40*time.Millisecond || got.Syncs < 2 || got.Stats < 1 {
		t.Errorf("report: republish %t, first sync %v, %d syncs, %d stats rounds; want republish, 40ms, 2+, 1+",
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
	e.k.runPod(ctx, e.pod("app-1"), -1, sched, &rep)
	if time.Since(start) > 2*time.Second {
		t.Errorf("RunPod(-1) did not end with its context")
	}
	e.unmountOK("app-1")
}
