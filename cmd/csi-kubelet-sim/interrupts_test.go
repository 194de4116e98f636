package main

import (
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchInterrupts: the copies of one group signal (a few ms apart)
// count once; a second signal a second or more after the first abandons
// the teardown.
func TestWatchInterrupts(t *testing.T) {
	cases := []struct {
		name        string
		gaps        []time.Duration // after the first signal
		wantAbandon bool
	}{
		{"one", nil, false},
		{"group copies", []time.Duration{time.Millisecond, 3 * time.Millisecond}, false},
		{"just under", []time.Duration{sameDelivery - time.Millisecond}, false},
		{"second later", []time.Duration{5 * time.Millisecond, sameDelivery + 200*time.Millisecond}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The watcher reads the clock once per signal, in order.
			base := time.Unix(1000, 0)
			times := []time.Time{base}
			for _, g := range tc.gaps {
				times = append(times, base.Add(g))
			}
			now := func() time.Time { t := times[0]; times = times[1:]; return t }
			var cancelled, abandoned atomic.Int32
			sigs := make(chan os.Signal)
			done := make(chan struct{})
			exited := make(chan struct{})
			go func() {
				watchInterrupts(sigs, done, now, func() {}, func(os.Signal) { cancelled.Add(1) }, func() { abandoned.Add(1) })
				close(exited)
			}()
			sigs <- os.Interrupt
			for range tc.gaps {
				sigs <- os.Interrupt
			}
			close(done)
			<-exited
			if cancelled.Load() != 1 {
				t.Errorf("run cancelled %d times, want 1", cancelled.Load())
			}
			if got := abandoned.Load() > 0; got != tc.wantAbandon {
				t.Errorf("teardown abandoned: %v, want %v", got, tc.wantAbandon)
			}
		})
	}
}
