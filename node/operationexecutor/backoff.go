package operationexecutor

// backoff.go follows pkg/util/goroutinemap/exponentialbackoff/exponential_backoff.go.

import (
	"time"
)

// The kubelet's per-operation exponential backoff
// (pkg/util/goroutinemap/exponentialbackoff): 500 ms after the first
// failure, doubling, capped at 2m2s, no jitter.
const (
	InitialDurationBeforeRetry = 500 * time.Millisecond
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

// Backoff is the state of one operation key.
type Backoff struct {
	next    time.Duration
	Started time.Time
}

// DurationBeforeRetry is exponentialBackoff.calculateDurationBeforeRetry.
func (b *Backoff) DurationBeforeRetry() time.Duration {
	if b.next == 0 {
		b.next = InitialDurationBeforeRetry
	} else {
		b.next *= 2
		if b.next > maxDurationBeforeRetry {
			b.next = maxDurationBeforeRetry
		}
	}
	return b.next
}

// Allows tells whether another attempt may start after attempts, at
// elapsed time since the first.
func (r Retry) Allows(attempts int, elapsed time.Duration) bool {
	if r.MaxAttempts <= 1 && r.For == 0 {
		return false
	}
	if r.MaxAttempts > 1 && attempts >= r.MaxAttempts {
		return false
	}
	return r.For == 0 || elapsed <= r.For
}
