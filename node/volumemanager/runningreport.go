package volumemanager

// runningreport.go: what happened while the pods ran (pod syncs'
// republishes and their retries, stats), counted for the run's report.

import (
	"sync"
	"time"
)

// RunningReport counts what the kubelet did to running pods, for the
// summary. It is safe for concurrent use; failures beyond the first few
// are only counted, so that a long hold keeps constant memory.
type RunningReport struct {
	mu              sync.Mutex
	Republish       bool // a driver of the pods requires republish
	Syncs           int
	RepublishFailed int
	// RepublishRetried counts the failed remounts that a retry got
	// through (--retry-for, --max-attempts).
	RepublishRetried int
	Stats            int
	StatsFailed      int
	// FirstSync is when the first pod sync was due, for the user who
	// wonders why none came.
	FirstSync time.Duration
	Errs      []error
}

func (r *RunningReport) add(f func(r *RunningReport), errs []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
	for _, e := range errs {
		if len(r.Errs) < maxRunningErrs {
			r.Errs = append(r.Errs, e)
		}
	}
}

// Snapshot returns a copy of the counts.
func (r *RunningReport) Snapshot() RunningReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RunningReport{Republish: r.Republish, Syncs: r.Syncs, RepublishFailed: r.RepublishFailed, RepublishRetried: r.RepublishRetried,
		Stats: r.Stats, StatsFailed: r.StatsFailed, FirstSync: r.FirstSync, Errs: append([]error(nil), r.Errs...)}
}

const maxRunningErrs = 20
