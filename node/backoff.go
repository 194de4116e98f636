package node

import (
	"context"
	"fmt"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// The kubelet's per-operation exponential backoff
// (pkg/util/goroutinemap/exponentialbackoff): 500 ms after the first
// failure, doubling, capped at 2m2s, no jitter.
const (
	initialDurationBeforeRetry = 500 * time.Millisecond
	maxDurationBeforeRetry     = 2*time.Minute + 2*time.Second
)

// Retry bounds the kubelet's retries, which in a real kubelet never stop.
type Retry struct {
	// MaxAttempts per operation; 0 or 1 means one attempt.
	MaxAttempts int
	// For bounds the time spent retrying one operation; 0: no bound
	// besides MaxAttempts.
	For time.Duration
}

// backoff is the state of one operation key.
type backoff struct {
	next    time.Duration
	started time.Time
}

// durationBeforeRetry is exponentialBackoff.calculateDurationBeforeRetry.
func (b *backoff) durationBeforeRetry() time.Duration {
	if b.next == 0 {
		b.next = initialDurationBeforeRetry
	} else {
		b.next *= 2
		if b.next > maxDurationBeforeRetry {
			b.next = maxDurationBeforeRetry
		}
	}
	return b.next
}

// withRetry runs op until it succeeds or the retry bounds are reached,
// waiting the kubelet's backoff between attempts and saying so in the trace.
func (k *Kubelet) withRetry(ctx context.Context, l csiclient.Labels, op func(attempt int) error) error {
	b := &backoff{started: time.Now()}
	for attempt := 1; ; attempt++ {
		err := op(attempt)
		if err == nil {
			return nil
		}
		wait := b.durationBeforeRetry()
		if !k.cfg.Retry.allows(attempt, time.Since(b.started)+wait) {
			return err
		}
		k.Trace.Note(csiclient.WithLabels(ctx, l), false, fmt.Sprintf("attempt %d failed; the kubelet retries after its backoff of %s", attempt, wait))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// allows tells whether another attempt may start after attempts, at
// elapsed time since the first.
func (r Retry) allows(attempts int, elapsed time.Duration) bool {
	if r.MaxAttempts <= 1 && r.For == 0 {
		return false
	}
	if r.MaxAttempts > 1 && attempts >= r.MaxAttempts {
		return false
	}
	return r.For == 0 || elapsed <= r.For
}
