package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
)

// The kubelet's exponential backoff: 500ms, doubling, capped at 2m2s.
func TestDurationBeforeRetry(t *testing.T) {
	want := []string{"500ms", "1s", "2s", "4s", "8s", "16s", "32s", "1m4s", "2m2s", "2m2s"}
	var b operationexecutor.Backoff
	var got []string
	for range want {
		got = append(got, b.DurationBeforeRetry().String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("waits %q, want %q", got, want)
	}
}

func TestRetryAllows(t *testing.T) {
	tests := []struct {
		r        operationexecutor.Retry
		attempts int
		elapsed  time.Duration
		want     bool
	}{
		{operationexecutor.Retry{}, 1, 0, false},
		{operationexecutor.Retry{MaxAttempts: 1}, 1, 0, false},
		{operationexecutor.Retry{MaxAttempts: 3}, 2, time.Hour, true},
		{operationexecutor.Retry{MaxAttempts: 3}, 3, 0, false},
		{operationexecutor.Retry{For: time.Second}, 10, 999 * time.Millisecond, true},
		{operationexecutor.Retry{For: time.Second}, 10, 1001 * time.Millisecond, false},
		{operationexecutor.Retry{MaxAttempts: 5, For: time.Second}, 4, 2 * time.Second, false},
		{operationexecutor.Retry{MaxAttempts: 5, For: time.Second}, 5, 0, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%+v after %d in %v", tc.r, tc.attempts, tc.elapsed), func(t *testing.T) {
			if got := tc.r.Allows(tc.attempts, tc.elapsed); got != tc.want {
				t.Errorf("allows = %t, want %t", got, tc.want)
			}
		})
	}
}

// A teardown that fails once is tried again after the backoff, and the
// trace says so; without retries the first failure is the answer.
func TestTeardownRetried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retry     operationexecutor.Retry
		wantCalls int
		wantErrs  int
	}{
		{"no retries", operationexecutor.Retry{}, 1, 1},
		{"two attempts", operationexecutor.Retry{MaxAttempts: 2}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage), func(c *Config) { c.Retry = tc.retry })
			e.mountOK("app-1")
			e.drv.FailNext("NodeUnpublishVolume", codes.Internal, 1)
			errs := e.unmount("app-1")
			if len(errs) != tc.wantErrs {
				t.Errorf("errors %v, want %d", errs, tc.wantErrs)
			}
			if n := len(e.drv.CallsOf("NodeUnpublishVolume")); n != tc.wantCalls {
				t.Errorf("%d NodeUnpublishVolume, want %d", n, tc.wantCalls)
			}
			const note = "attempt 1 failed; the kubelet retries after its backoff of 500ms"
			if got := slices.Contains(e.steps(false), note); got != (tc.wantCalls == 2) {
				t.Errorf("note %q present %t", note, got)
			}
		})
	}
}

// A cancelled context ends the wait with the last error.
func TestWithRetryCancelled(t *testing.T) {
	e := newUnregisteredEnv(t, "", newFakeDriver(), func(c *Config) { c.Retry = operationexecutor.Retry{MaxAttempts: 5} })
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	start := time.Now()
	err := e.k.vm.WithRetry(ctx, csiclient.Labels{Component: "kubelet", Operation: "TearDown"}, func(int) error {
		attempts++
		cancel()
		return fmt.Errorf("attempt %d", attempts)
	})
	// Bounded by the backoff it must not wait for (not by a guess of how
	// fast a loaded machine is).
	if err == nil || err.Error() != "attempt 1" || attempts != 1 || time.Since(start) >= operationexecutor.InitialDurationBeforeRetry {
		t.Errorf("err %v after %d attempts in %v; want attempt 1 at once", err, attempts, time.Since(start))
	}
}
