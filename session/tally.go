package session

import (
	"sync"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// tally counts the calls of a run as they happen, so that the summary and
// the exit code need no kept trace: a long hold or a load keeps constant
// memory.
type tally struct {
	mu         sync.Mutex
	calls      int
	failed     int
	driverTime time.Duration
	timedOut   string // the first call the operation's timeout cut off
}

func (t *tally) Call(c csiclient.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	t.driverTime += c.Duration
	if c.Err != nil {
		t.failed++
	}
	if c.TimedOut && t.timedOut == "" {
		t.timedOut = c.Method
	}
}

func (t *tally) Step(csiclient.Step) {}

// counts returns a consistent copy.
func (t *tally) counts() (calls, failed int, driverTime time.Duration, timedOut string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls, t.failed, t.driverTime, t.timedOut
}
