package node

import (
	"context"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// Republish is one pod sync of the running pod (round counts the syncs
// from 1), as the pod worker does it.
func (p *RunningPod) Republish(ctx context.Context, round int) []error {
	return p.k.vm.Republish(ctx, p.Result.Pod, round)
}

// Unmount tears the pod's volumes down before the plan's teardown, as
// when the pod is deleted; the teardown then finds them gone.
func (p *RunningPod) Unmount(ctx context.Context) []error {
	return p.k.vm.UnmountPod(ctx, p.Result.Pod, false)
}

// whileRunning hands a mounted pod to the plan's WhileRunning.
func (k *Kubelet) whileRunning(ctx context.Context, plan Plan, res *volumemanager.PodResult) {
	if plan.WhileRunning != nil {
		plan.WhileRunning(ctx, &RunningPod{Result: res, k: k})
	}
}
