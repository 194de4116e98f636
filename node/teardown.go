package node

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// teardown is what the kubelet tears down once its pods are deleted: the
// end of Run, and of Recover after a restart.
type teardown struct {
	// pods are unmounted one after the other, in this order.
	pods []*corev1.Pod
	// allDevices: every device the kubelet knows is then unmounted when
	// no pod uses it, not only the pods' (the restarted kubelet's
	// reconstructed global mounts, which may have no pod left).
	allDevices bool
	// after is the cluster's controllers once the kubelet is done (detach,
	// delete); skipped when the teardown was abandoned. Nil: none.
	after func(ctx context.Context) []error
	// removeRoot: the clean-up removes the root dir when it leaves it
	// empty.
	removeRoot bool
}

// teardownAll unmounts the pods' volumes and devices, runs the controllers
// and cleans up, into out. ctx is the teardown's own context: when it ends
// the teardown is abandoned, and only the clean-up still runs.
func (k *Kubelet) teardownAll(ctx context.Context, t teardown, out *Outcome) {
	for _, pod := range t.pods {
		out.TeardownErrs = append(out.TeardownErrs, k.vm.UnmountPod(ctx, pod, false)...)
	}
	if t.allDevices {
		out.TeardownErrs = append(out.TeardownErrs, k.vm.UnmountDevices(ctx, k.vm.State.AllDevices())...)
	}
	if t.after != nil && ctx.Err() == nil {
		out.TeardownErrs = append(out.TeardownErrs, t.after(ctx)...)
	}
	out.Abandoned = ctx.Err() != nil
	out.Leftovers = k.vm.Cleanup(context.WithoutCancel(ctx), t.removeRoot)
}
