package node

import (
	"time"
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
