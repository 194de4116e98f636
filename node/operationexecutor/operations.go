// Package operationexecutor is the kubelet's operation executor as the
// volume manager uses it: at most one operation per volume and pod
// (operations.go, after pkg/volume/util/nestedpendingoperations) and the
// exponential backoff of a failed operation with the bounds of its retries
// (backoff.go, after pkg/util/goroutinemap/exponentialbackoff). The
// operations themselves are the kubelet's (node, its operation generator).
package operationexecutor

import (
	"context"
	"sync"
	"time"
)

// reconcilerLoopPeriod is how often the volume manager's reconciler looks
// again at a volume whose operation it could not start
// (reconcilerLoopSleepPeriod, volume_manager.go).
const reconcilerLoopPeriod = 100 * time.Millisecond

// OperationKey is nestedpendingoperations' key: the volume and the pod.
// An empty pod is the whole volume: MountVolume of an attachable or
// device-mountable plugin (CSI is both) and UnmountDevice use it, so a
// volume is mounted for one pod at a time; UnmountVolume uses the pod, so
// different pods' unmounts of a volume run side by side.
type OperationKey struct {
	Volume, Pod string
}

// Conflicts is isOperationExists: the same volume, and the same pod or
// either pod empty.
func (a OperationKey) Conflicts(b OperationKey) bool {
	return a.Volume == b.Volume && (a.Pod == "" || b.Pod == "" || a.Pod == b.Pod)
}

// Operations is the operation executor's pending operations: at most one
// operation per key. Where the kubelet's reconciler finds an operation
// pending it tries again on its next loop, and so does run: it waits one
// reconciler period and looks again.
type Operations struct {
	mu      sync.Mutex
	pending []OperationKey
	// backingOff are the volumes whose failed remount waits for its retry
	// (remountretry.go).
	backingOff map[string]bool
}

// Run runs op once no conflicting operation is pending, or returns ctx's
// error if ctx ends first.
func (o *Operations) Run(ctx context.Context, key OperationKey, op func() error) error {
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

func (o *Operations) start(key OperationKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.pending {
		if p.Conflicts(key) {
			return false
		}
	}
	o.pending = append(o.pending, key)
	return true
}

func (o *Operations) finish(key OperationKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, p := range o.pending {
		if p == key {
			o.pending = append(o.pending[:i], o.pending[i+1:]...)
			return
		}
	}
}

// Retrying tells whether volume's failed remount waits for its retry.
func (o *Operations) Retrying(volume string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.backingOff[volume]
}

func (o *Operations) SetBackingOff(volume string, on bool) {
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
