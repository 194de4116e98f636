package operationexecutor

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The operation executor's keys (nestedpendingoperations): an empty pod
// name is the whole volume.
func TestOperationKeysConflict(t *testing.T) {
	for _, tc := range []struct {
		a, b OperationKey
		want bool
	}{
		{OperationKey{"v1", ""}, OperationKey{"v1", ""}, true},
		{OperationKey{"v1", ""}, OperationKey{"v1", "p1"}, true},
		{OperationKey{"v1", "p1"}, OperationKey{"v1", "p1"}, true},
		{OperationKey{"v1", "p1"}, OperationKey{"v1", "p2"}, false},
		{OperationKey{"v1", ""}, OperationKey{"v2", ""}, false},
	} {
		if got := tc.a.Conflicts(tc.b); got != tc.want {
			t.Errorf("%v vs %v: %t, want %t", tc.a, tc.b, got, tc.want)
		}
	}
}

// A second operation on a volume waits for the first; one on another
// volume runs at once.
func TestOperationsOnePerVolume(t *testing.T) {
	var ops Operations
	var inFlight, most atomic.Int32
	op := func() error {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(30 * time.Millisecond)
		inFlight.Add(-1)
		return nil
	}
	done := make(chan struct{}, 3)
	for _, key := range []OperationKey{{"v1", ""}, {"v1", "p1"}} {
		go func() { _ = ops.Run(context.Background(), key, op); done <- struct{}{} }()
	}
	<-done
	<-done
	if most.Load() != 1 {
		t.Errorf("conflicting operations ran side by side (%d at once)", most.Load())
	}
	most.Store(0)
	for _, key := range []OperationKey{{"v1", "p1"}, {"v1", "p2"}} {
		go func() { _ = ops.Run(context.Background(), key, op); done <- struct{}{} }()
	}
	<-done
	<-done
	if most.Load() != 2 {
		t.Errorf("different pods' operations on a volume did not run side by side (%d at once)", most.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	go func() {
		_ = ops.Run(context.Background(), OperationKey{"v9", ""}, func() error { <-release; return nil })
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := ops.Run(ctx, OperationKey{"v9", ""}, op); err == nil {
		t.Errorf("a waiting operation ignored its cancelled context")
	}
	close(release)
}
