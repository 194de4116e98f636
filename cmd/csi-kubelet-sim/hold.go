package main

import (
	"context"
	"math/rand/v2"
	"time"
)

// holdSchedule is when the kubelet touches a running pod's volumes.
type holdSchedule struct {
	syncFrequency   time.Duration
	republishPeriod time.Duration
	statsPeriod     time.Duration
}

// nextSync is the pod worker's requeue after a successful sync:
// wait.Jitter(syncFrequency, 0.5), or the fixed --republish-period.
func (h holdSchedule) nextSync() time.Duration {
	if h.republishPeriod > 0 {
		return h.republishPeriod
	}
	return h.syncFrequency + time.Duration(rand.Float64()*0.5*float64(h.syncFrequency))
}

// firstStats: the kubelet starts a pod's stats calculator at the next
// tick of its fs resource analyzer (every period), and the calculator's
// first round runs at once; so the first call comes at a random time within
// one period of the pod's start.
func (h holdSchedule) firstStats() time.Duration {
	return time.Duration(rand.Float64() * float64(h.statsPeriod))
}

// nextStats is wait.JitterUntil(period, 1.0): between 1x and 2x.
func (h holdSchedule) nextStats() time.Duration {
	return h.statsPeriod + time.Duration(rand.Float64()*float64(h.statsPeriod))
}

// hold keeps the pods running for d (forever when d < 0, until ctx ends):
// each pod sync republishes the volumes of drivers with requiresRepublish,
// and the stats calculator calls NodeGetVolumeStats.
func (ss *session) hold(ctx context.Context, d time.Duration, h holdSchedule) {
	if d == 0 {
		return
	}
	var end <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		end = t.C
	}
	pods := ss.opts.cluster.Pods()
	republish := false
	for _, p := range pods {
		republish = republish || ss.kubelet.RequiresRepublish(p)
	}
	ss.held.republish = republish
	syncT := stoppedTimer()
	if republish && (h.republishPeriod > 0 || h.syncFrequency > 0) {
		syncT.Reset(h.nextSync())
	}
	statsT := stoppedTimer()
	if h.statsPeriod > 0 {
		statsT.Reset(h.firstStats())
	}
	defer syncT.Stop()
	defer statsT.Stop()
	syncs, stats := 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-end:
			return
		case <-syncT.C:
			syncs++
			ss.held.syncs = syncs
			for _, p := range pods {
				errs := ss.kubelet.Republish(ctx, p, syncs)
				ss.held.republishFailed += len(errs)
				ss.holdErrs = append(ss.holdErrs, errs...)
			}
			syncT.Reset(h.nextSync())
		case <-statsT.C:
			stats++
			ss.held.stats = stats
			for _, p := range pods {
				errs := ss.kubelet.VolumeStats(ctx, p, stats)
				ss.held.statsFailed += len(errs)
				ss.holdErrs = append(ss.holdErrs, errs...)
			}
			statsT.Reset(h.nextStats())
		}
	}
}

// heldReport counts what the kubelet did to the running pods, for the
// summary: pod syncs that republished, stats rounds, and their failures.
type heldReport struct {
	republish              bool // a driver of the pods requires republish
	syncs, republishFailed int
	stats, statsFailed     int
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
