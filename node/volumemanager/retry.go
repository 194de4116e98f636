package volumemanager

// retry.go: the operation executor's exponential backoff around an operation.

import (
	"context"
	"fmt"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
)

// WithRetry runs op until it succeeds or the retry bounds are reached,
// waiting the kubelet's backoff between attempts and saying so in the trace.
func (k *VolumeManager) WithRetry(ctx context.Context, l csiclient.Labels, op func(attempt int) error) error {
	b := &operationexecutor.Backoff{Started: time.Now()}
	for attempt := 1; ; attempt++ {
		err := op(attempt)
		if err == nil {
			return nil
		}
		wait := b.DurationBeforeRetry()
		if !k.retry.Allows(attempt, time.Since(b.Started)+wait) {
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
