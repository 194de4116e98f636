package node

import (
	"context"
	"sync"
	"time"
)

// reconcilerLoopPeriod is how often the volume manager's reconciler looks
// again at a volume whose operation it could not start
// (reconcilerLoopSleepPeriod, volume_manager.go).
const reconcilerLoopPeriod = 100 * time.Millisecond

// operationKey is nestedpendingoperations' key: the volume and the pod.
// An empty pod is the whole volume: MountVolume of an attachable or
// device-mountable plugin (CSI is both) and UnmountDevice use it, so a
// volume is mounted for one pod at a time; UnmountVolume uses the pod, so
// different pods' unmounts of a volume run side by side.
type operationKey struct {
	volume, pod string
}

// conflicts is isOperationExists: the same volume, and the same pod or
// either pod empty.
func (a operationKey) conflicts(b operationKey) bool {
	return a.volume == b.volume && (a.pod == "" || b.pod == "" || a.pod == b.pod)
}

// operations is the operation executor's pending operations: at most one
// operation per key. Where the kubelet's reconciler finds an operation
// pending it tries again on its next loop, and so does run: it waits one
// reconciler period and looks again.
type operations struct {
	mu      sync.Mutex
	pending []operationKey
	// backingOff are the volumes whose failed remount waits for its retry
	// (remountretry.go).
	backingOff map[string]bool
}

// run runs op once no conflicting operation is pending, or returns ctx's
// error if ctx ends first.
func (o *operations) run(ctx context.Context, key operationKey, op func() error) error {
	for !o.start(key) {
		t := time.NewTimer(reconcilerLoopPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	defer o.finish(key)
	return op()
}

func (o *operations) start(key operationKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.pending {
		if p.conflicts(key) {
			return false
		}
	}
	o.pending = append(o.pending, key)
	return true
}

func (o *operations) finish(key operationKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, p := range o.pending {
		if p == key {
			o.pending = append(o.pending[:i], o.pending[i+1:]...)
			return
		}
	}
}

// retrying tells whether volume's failed remount waits for its retry.
func (o *operations) retrying(volume string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.backingOff[volume]
}

func (o *operations) setBackingOff(volume string, on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !on {
		delete(o.backingOff, volume)
		return
	}
	if o.backingOff == nil {
		o.backingOff = map[string]bool{}
	}
	o.backingOff[volume] = true
}
