package volumemanager

// republish.go follows pkg/kubelet/volumemanager/reconciler (the remount of
// requiresRepublish volumes at each pod sync).

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager/cache"
)

// RequiresRepublish tells whether any volume of the pod belongs to a
// driver whose CSIDriver has requiresRepublish (csiPlugin.RequiresRemount).
func (k *VolumeManager) RequiresRepublish(pod *corev1.Pod) bool {
	for _, key := range k.State.PodMounts(pod) {
		if m, ok := k.State.Mount(key); ok && k.requiresRemount(m.Spec.Driver) {
			return true
		}
	}
	return false
}

func (k *VolumeManager) requiresRemount(driver string) bool {
	d, ok := k.Cluster.CSIDriver(driver)
	return ok && d.Spec.RequiresRepublish != nil && *d.Spec.RequiresRepublish
}

// Republish is what one pod sync does to a running pod's volumes (docs/kubelet.md
// §5): for every mounted volume whose driver requires republish, the mount
// operation again with isRemount: WaitForAttach, no MountDevice (the device
// is globally mounted), the whole SetUp with tokens from the kubelet's
// cache, and the fsGroup walk. A block volume gets the whole map operation
// again (GenerateMapVolumeFunc): MapPodDevice, no SetUpDevice.
func (k *VolumeManager) Republish(ctx context.Context, pod *corev1.Pod, round int) []error {
	var errs []error
	for _, f := range k.remountAll(ctx, pod, round) {
		errs = append(errs, f.err)
	}
	return errs
}

// remountFailure is a volume whose remount failed in a pod sync: it stays
// mounted with remountRequired set, so the reconciler mounts it again once
// the operation's backoff allows (remountretry.go).
type remountFailure struct {
	key     cache.MountKey
	v       *csiplugin.VolumeSpec
	round   int
	started time.Time
	err     error
}

// remountAll is republish, telling which volumes failed. A volume whose
// failed remount waits for its retry is left alone: the operation of its
// key is in its backoff, and the kubelet runs one operation per volume.
func (k *VolumeManager) remountAll(ctx context.Context, pod *corev1.Pod, round int) []remountFailure {
	var fails []remountFailure
	for _, key := range k.State.PodMounts(pod) {
		m, ok := k.State.Mount(key)
		if !ok || m.Status != cache.StatusMounted || !k.requiresRemount(m.Spec.Driver) {
			continue
		}
		v := m.Spec
		if k.ops.Retrying(key.UniqueName) {
			l := csiclient.Labels{Component: "kubelet", Operation: fmt.Sprintf("SetUp#%d", round), Volume: v.SpecName, Pod: podName(pod)}
			k.Trace.Note(csiclient.WithLabels(ctx, l), false, "pod sync: the volume's failed remount waits for its retry (the operation's backoff), so this sync starts no other: one operation per volume at a time")
			continue
		}
		started := time.Now()
		if err := k.remountOp(ctx, pod, v, key, round); err != nil {
			fails = append(fails, remountFailure{key: key, v: v, round: round, started: started, err: err})
		}
	}
	return fails
}

// remountOp is the remount as an operation, under the volume's key.
func (k *VolumeManager) remountOp(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec, key cache.MountKey, round int) error {
	return k.ops.Run(ctx, operationexecutor.OperationKey{Volume: key.UniqueName}, func() error {
		return k.remount(ctx, pod, v, key, round)
	})
}

// remount is one volume's part of a pod sync for a requiresRepublish
// driver.
func (k *VolumeManager) remount(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec, key cache.MountKey, round int) error {
	if v.Block {
		return k.mapVolume(ctx, pod, v, round)
	}
	{
		labels := csiclient.Labels{Component: "kubelet", Operation: fmt.Sprintf("SetUp#%d", round), Volume: v.SpecName, Pod: podName(pod)}
		if v.Persistent() && k.AttachRequired(v.Driver) {
			if err := k.waitForAttach(csiclient.WithLabels(ctx, labels), v); err != nil {
				return k.volumeFailure(ctx, labels, "MountVolume.WaitForAttach", v, pod, &csiplugin.OpError{Kind: csiplugin.Transient, Err: err})
			}
		}
		octx, cancel := k.operationContext(ctx, labels)
		err := k.mounter.SetUp(octx, pod, v, csiplugin.MounterArgs{SELinuxLabel: k.State.SELinuxLabel(key.UniqueName), IsRemount: true})
		cancel()
		if err != nil {
			// The volume stays mounted and remountRequired stays set
			// (markVolumeErrorState leaves a mounted volume alone): the
			// reconciler retries after the operation's backoff.
			return k.volumeFailure(ctx, labels, "MountVolume.SetUp", v, pod, err)
		}
	}
	return nil
}
