package volumemanager

// running.go follows pkg/kubelet/pod_workers.go (pod syncs) and
// pkg/kubelet/server/stats (the stats analyzer's periods).

import (
	"context"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
)

// RunningSchedule is when the kubelet touches a running pod's volumes.
type RunningSchedule struct {
	// SyncFrequency is the pod worker's resync period (--sync-frequency).
	SyncFrequency time.Duration
	// RepublishPeriod replaces the jittered sync with a fixed period.
	RepublishPeriod time.Duration
	// StatsPeriod is --volume-stats-agg-period; 0: no stats calls.
	StatsPeriod time.Duration
}

// NextSync is the pod worker's requeue after a successful sync:
// wait.Jitter(syncFrequency, 0.5), or the fixed RepublishPeriod.
func (s RunningSchedule) NextSync() time.Duration {
	if s.RepublishPeriod > 0 {
		return s.RepublishPeriod
	}
	return s.SyncFrequency + time.Duration(rand.Float64()*0.5*float64(s.SyncFrequency))
}

// plegRelistPeriod is the generic PLEG's periodic relist
// (genericPlegRelistPeriod, pkg/kubelet/kubelet.go).
const plegRelistPeriod = time.Second

// EarlySync is when a pod's second sync comes after its first, and why.
// The first sync started the pod's sandbox and containers; the PLEG sees
// them start and its ContainerStarted event syncs the pod again
// (syncLoopIteration, isSyncPodWorthy), which republishes requiresRepublish
// volumes: at once with PLEGOnDemandRelist, whose SyncPod asks for a relist
// of the pod when it did runtime work (postSync, RequestPodRelist), else at
// the next periodic relist. The regular syncs count from this one.
func (k *VolumeManager) EarlySync() (time.Duration, string) {
	if k.Release.Enabled(release.PLEGOnDemandRelist) {
		return 0, "pod sync: the pod's containers started, and PLEGOnDemandRelist relists the pod at once: its ContainerStarted event syncs the pod again, so requiresRepublish volumes are published again right after the first publish"
	}
	return time.Duration(rand.Float64() * float64(plegRelistPeriod)),
		"pod sync: the PLEG's periodic relist (every 1s) saw the pod's containers start: its ContainerStarted event syncs the pod again, so requiresRepublish volumes are published again within a second of the first publish"
}

// FirstStats is when a pod's first stats round comes, now being when it
// starts to run. The kubelet's fs resource analyzer starts with the kubelet
// and, every period from then (wait.Forever), starts a stats calculator for
// each pod it has not seen yet; a calculator's first round runs at once
// (fs_resource_analyzer.go, volume_stat_calculator.go). So the round comes
// at the analyzer's first tick after the pod arrived, a whole number of
// periods after the kubelet started: one period after it for a pod that
// arrives at once.
func (s RunningSchedule) FirstStats(started, now time.Time) time.Duration {
	since := max(now.Sub(started), 0)
	return (since/s.StatsPeriod+1)*s.StatsPeriod - since
}

// NextStats is wait.JitterUntil(period, 1.0): between 1x and 2x.
func (s RunningSchedule) NextStats() time.Duration {
	return s.StatsPeriod + time.Duration(rand.Float64()*float64(s.StatsPeriod))
}

// RunPod keeps one pod running for d (until ctx ends when d < 0), as its
// pod worker and stats calculator do: each sync republishes the volumes of
// drivers with requiresRepublish, on the pod's own jittered period (a
// failed remount retried with the kubelet's backoff as the retry bounds
// allow, until the pod's run ends), and each stats round calls
// NodeGetVolumeStats per volume on its own.
func (k *VolumeManager) RunPod(ctx context.Context, pod *corev1.Pod, d time.Duration, s RunningSchedule, rep *RunningReport) {
	if d == 0 {
		return
	}
	var end <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		end = t.C
	}
	republish := k.RequiresRepublish(pod)
	retries := k.newRemountRetries(ctx, pod, rep)
	defer retries.end()
	syncT := stoppedTimer()
	defer syncT.Stop()
	early, why := k.EarlySync()
	if republish && (s.RepublishPeriod > 0 || s.SyncFrequency > 0) {
		first := early
		rep.add(func(r *RunningReport) {
			r.Republish = true
			if r.FirstSync == 0 || first < r.FirstSync {
				r.FirstSync = first
			}
		}, nil)
		syncT.Reset(first)
	}
	statsT := stoppedTimer()
	defer statsT.Stop()
	if s.StatsPeriod > 0 {
		statsT.Reset(s.FirstStats(k.Started, time.Now()))
	}
	syncs, stats := 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-end:
			return
		case <-syncT.C:
			syncs++
			if syncs == 1 {
				k.Trace.Note(csiclient.WithLabels(ctx, csiclient.Labels{Component: "kubelet", Operation: "SetUp#1", Pod: podName(pod)}), false, why)
			}
			errs := retries.start(k.remountAll(ctx, pod, syncs))
			rep.add(func(r *RunningReport) { r.Syncs++; r.RepublishFailed += len(errs) }, errs)
			syncT.Reset(s.NextSync())
		case <-statsT.C:
			stats++
			errs := k.VolumeStats(ctx, pod, stats)
			rep.add(func(r *RunningReport) { r.Stats++; r.StatsFailed += len(errs) }, errs)
			statsT.Reset(s.NextStats())
		}
	}
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
