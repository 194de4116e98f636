package report

import (
	"slices"
	"time"
)

// flight finds the most calls in flight at once: the largest number of
// calls whose [Start, Start+Duration) intervals share an instant. It is a
// sweep over start (+1) and end (-1) events, done as the calls arrive so
// that only the events that may still change the answer are held.
//
// A call reaches the sinks when it ends, so a call that started long ago
// may still arrive. The trace tells BeginSinks each start in start order
// (csiclient.Trace.begin), so the earliest start still in flight is known:
// no unknown event lies before it, and every event before it is swept and
// forgotten. Memory is then bounded by the calls that overlap the oldest
// call still in flight: with a driver that hangs, the calls of the
// kubelet's timeout (2 minutes), 16 bytes each. Without begins (calls fed
// by hand) the events are held until summary.
type flight struct {
	open    []int64 // starts of calls begun, in start order; open[head:] may be in flight
	head    int
	openN   map[int64]int // how many calls are open at each start
	pending []event       // events not yet swept
	level   int           // calls in flight at the sweep point
	max     int
	sweepAt int  // sweep when pending reaches this length
	begins  bool // begins are being sent
}

type event struct {
	t int64 // unix nanoseconds
	d int   // +1 start, -1 end
}

func newFlight() flight {
	return flight{openN: map[int64]int{}, sweepAt: 64}
}

func (f *flight) begin(start time.Time) {
	t := start.UnixNano()
	f.begins = true
	f.open = append(f.open, t)
	f.openN[t]++
}

// done adds a finished call and sweeps what can no longer change.
func (f *flight) done(start time.Time, d time.Duration) {
	s := start.UnixNano()
	f.pending = append(f.pending, event{s, +1}, event{s + int64(d), -1})
	if f.openN[s] > 0 {
		f.openN[s]--
	}
	for f.head < len(f.open) && f.openN[f.open[f.head]] == 0 {
		delete(f.openN, f.open[f.head])
		f.head++
	}
	// Reuse the queue's array rather than let it slide and grow.
	if f.head > 32 && f.head > len(f.open)/2 {
		f.open = f.open[:copy(f.open, f.open[f.head:])]
		f.head = 0
	}
	if f.begins && f.head == len(f.open) {
		f.sweep(nil)
		return
	}
	if f.head < len(f.open) && len(f.pending) >= f.sweepAt {
		w := f.open[f.head]
		f.sweep(&w)
		f.sweepAt = max(64, 2*len(f.pending))
	}
}

// sweep moves the sweep point over the pending events before until (all
// of them when until is nil) and forgets them.
func (f *flight) sweep(until *int64) {
	sortEvents(f.pending)
	i := 0
	for ; i < len(f.pending); i++ {
		e := f.pending[i]
		if until != nil && e.t >= *until {
			break
		}
		f.level += e.d
		f.max = max(f.max, f.level)
	}
	f.pending = append(f.pending[:0], f.pending[i:]...)
}

// most is the largest number in flight so far, counting the pending events
// without consuming them.
func (f *flight) most() int {
	level, most := f.level, f.max
	evs := slices.Clone(f.pending)
	sortEvents(evs)
	for _, e := range evs {
		level += e.d
		most = max(most, level)
	}
	return most
}

// sortEvents orders by time, ends before starts at the same instant: a
// call that ends when another starts did not overlap it.
func sortEvents(evs []event) {
	slices.SortFunc(evs, func(a, b event) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return a.d - b.d
	})
}
