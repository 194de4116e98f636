package node

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// prepareController runs the plan's controller before the pods; false
// when it failed (the error is the outcome's ControllerErr, and no pod
// runs).
func (k *Kubelet) prepareController(ctx context.Context, plan Plan, reg *csiplugin.Registration, pods []PodPlan, out *Outcome) bool {
	if plan.Controller == nil {
		return true
	}
	list := make([]*corev1.Pod, len(pods))
	for i, pp := range pods {
		list[i] = pp.Pod
	}
	out.ControllerErr = plan.Controller.Prepare(ctx, reg, list)
	return out.ControllerErr == nil
}

// finishController is the plan's controller after the kubelet's teardown;
// nil without one.
func (k *Kubelet) finishController(plan Plan) func(context.Context) []error {
	if plan.Controller == nil {
		return nil
	}
	return func(ctx context.Context) []error { return plan.Controller.Finish(ctx, k.volumeInUse) }
}

// volumeInUse tells whether the kubelet still has the volume: staged
// (or uncertain) or mounted by a pod. The attach/detach controller does
// not detach such a volume, and its PV is not released.
func (k *Kubelet) volumeInUse(driver, handle string) bool {
	return k.vm.State.VolumeInUse(rootdir.UniqueVolumeName(driver, handle))
}
