package volumemanager

// remountretry.go follows pkg/kubelet/volumemanager/reconciler: a failed
// remount retried with the operation executor's backoff.

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
)

// A failed remount leaves the volume mounted with remountRequired set
// (markVolumeErrorState changes only an uncertain or unmounted volume, and
// only a successful mount clears remountRequired), so the reconciler, every
// 100 ms, starts the mount operation again as soon as the operation's
// backoff (500 ms, doubling) allows, without waiting for the next pod sync
// (docs/kubelet.md §5). remountRetries does that for one running pod, within
// the retry bounds, until the pod's run ends.
type remountRetries struct {
	k   *VolumeManager
	pod *corev1.Pod
	rep *RunningReport
	// run is the whole run's context, which an attempt takes; hold ends
	// with the pod's run, and with it the waits for a retry.
	run  context.Context
	hold context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
}

func (k *VolumeManager) newRemountRetries(ctx context.Context, pod *corev1.Pod, rep *RunningReport) *remountRetries {
	hold, stop := context.WithCancel(ctx)
	return &remountRetries{k: k, pod: pod, rep: rep, run: ctx, hold: hold, stop: stop}
}

// start takes a sync's failed remounts: each is retried in the background
// when the retry bounds allow a second attempt, and returned as the sync's
// failure otherwise.
func (r *remountRetries) start(fails []remountFailure) []error {
	var errs []error
	for _, f := range fails {
		if !r.k.retry.Allows(1, time.Since(f.started)+operationexecutor.InitialDurationBeforeRetry) {
			r.note(f, fmt.Sprintf("the kubelet retries this remount after its backoff of %s while the pod runs; --retry-for or --max-attempts does so here", operationexecutor.InitialDurationBeforeRetry))
			errs = append(errs, f.err)
			continue
		}
		r.k.ops.SetBackingOff(f.key.UniqueName, true)
		r.wg.Add(1)
		go r.retry(f)
	}
	return errs
}

// end stops the waits for a retry, as the pod's deletion does (its
// volumes leave the desired state of the world), and waits for an
// attempt in flight.
func (r *remountRetries) end() {
	r.stop()
	r.wg.Wait()
}

// retry attempts f's remount again after each backoff until it succeeds,
// the retry bounds are reached or the pod's run ends; a remount that never
// succeeded is the sync's failure.
func (r *remountRetries) retry(f remountFailure) {
	defer r.wg.Done()
	defer r.k.ops.SetBackingOff(f.key.UniqueName, false)
	b := &operationexecutor.Backoff{Started: f.started}
	err := f.err
	for attempt := 1; ; attempt++ {
		wait := b.DurationBeforeRetry()
		if !r.k.retry.Allows(attempt, time.Since(b.Started)+wait) {
			break
		}
		r.note(f, fmt.Sprintf("attempt %d failed; the kubelet retries after its backoff of %s", attempt, wait))
		if !SleepUntil(r.hold, time.Now().Add(wait)) {
			r.note(f, "the pod's run ended before the retry: the remount stays failed")
			break
		}
		if err = r.k.remountOp(r.run, r.pod, f.v, f.key, f.round); err == nil {
			r.rep.add(func(rr *RunningReport) { rr.RepublishRetried++ }, nil)
			return
		}
	}
	r.rep.add(func(rr *RunningReport) { rr.RepublishFailed++ }, []error{err})
}

func (r *remountRetries) note(f remountFailure, text string) {
	l := csiclient.Labels{Component: "kubelet", Operation: fmt.Sprintf("SetUp#%d", f.round), Volume: f.v.SpecName, Pod: podName(r.pod)}
	r.k.Trace.Note(csiclient.WithLabels(r.run, l), false, text)
}
