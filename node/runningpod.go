package node

import (
	"context"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// RunningPod is a pod whose volumes are all mounted, handed to a Plan's
// WhileRunning: what may be done to it while it runs, through the same
// kubelet that mounted it.
type RunningPod struct {
	// Result is what mounting the pod's volumes did.
	Result *volumemanager.PodResult
	k      *Kubelet
}

// Republish is one pod sync of the running pod (round counts the syncs
// from 1), as the pod worker does it.
func (p *RunningPod) Republish(ctx context.Context, round int) []error {
	return p.k.Republish(ctx, p.Result.Pod, round)
}

// Unmount tears the pod's volumes down before the plan's teardown, as
// when the pod is deleted; the teardown then finds them gone.
func (p *RunningPod) Unmount(ctx context.Context) []error {
	return p.k.UnmountPod(ctx, p.Result.Pod, false)
}

// whileRunning hands a mounted pod to the plan's WhileRunning.
func (k *Kubelet) whileRunning(ctx context.Context, plan Plan, res *volumemanager.PodResult) {
	if plan.WhileRunning != nil {
		plan.WhileRunning(ctx, &RunningPod{Result: res, k: k})
	}
}
