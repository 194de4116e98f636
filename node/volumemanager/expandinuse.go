package volumemanager

// expandinuse.go follows pkg/kubelet/volumemanager/reconciler (in-use
// expansion) and node_expander.go.

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
)

// inUseExpansionDue is the populator's checkVolumeFSResize (the desired
// size is the PV's, never recorded for a read-only volume) and the actual
// state's volumeNeedsExpansion: the claim size it holds is known and below
// the PV's, and no driver said it cannot expand the volume in use.
func (k *VolumeManager) inUseExpansionDue(v *csiplugin.VolumeSpec, unique string) (old, desired resource.Quantity, due bool) {
	if v.PV == nil || v.PVC == nil || v.ReadOnly {
		return old, desired, false
	}
	desired = v.PV.Spec.Capacity[corev1.ResourceStorage]
	cs := k.State.ClaimSize(unique)
	if cs.InUseError || cs.Size.IsZero() || desired.IsZero() || desired.Cmp(cs.Size) <= 0 {
		return cs.Size, desired, false
	}
	return cs.Size, desired, true
}

// expandInUse is the reconciler's pass after the pod's volumes were
// mounted: the mount's expansion (expandDuringMount) does not record the
// new size in the actual state, so for a volume whose claim size there is
// still below the PV's, the reconciler runs ExpandInUseVolume
// (GenerateExpandInUseVolumeFunc), which calls NodeExpandVolume again on
// the legacy path. It comes before the pod's next sync (docs/kubelet.md §15.4).
// A failure is the volume's: the kubelet's VolumeResizeFailed event.
func (k *VolumeManager) expandInUse(ctx context.Context, pod *corev1.Pod, specs []*csiplugin.VolumeSpec, res *PodResult) {
	for i, v := range specs {
		if ctx.Err() != nil {
			return
		}
		if res.Volumes[i].Err != nil {
			continue
		}
		if err := k.expandInUseOne(ctx, pod, v); err != nil {
			res.Volumes[i].Err = err
		}
	}
}

// expandInUseOne is one volume's ExpandInUseVolume, under the volume's
// operation key and with the kubelet's retries.
func (k *VolumeManager) expandInUseOne(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec) error {
	unique := v.UniqueName(string(pod.UID))
	old, desired, due := k.inUseExpansionDue(v, unique)
	if !due {
		return nil
	}
	l := csiclient.Labels{Component: "kubelet", Operation: "ExpandInUseVolume", Volume: v.SpecName, Pod: podName(pod)}
	k.Trace.Note(csiclient.WithLabels(ctx, l), false, fmt.Sprintf("in-use expansion: the kubelet's actual state still has the claim's old size %s (the mount's expansion does not record the new one), below the PV's %s, so the reconciler's next pass expands the volume again while the pod runs (docs/kubelet.md §15.4)", old.String(), desired.String()))
	at := k.inUsePaths(pod, v)
	waiting := false
	err := k.WithRetry(ctx, l, func(int) error {
		return k.ops.Run(ctx, operationexecutor.OperationKey{Volume: unique}, func() error {
			octx, cancel := k.operationContext(ctx, l)
			defer cancel()
			done, size, err := k.resizeOnNode(octx, pod, v, at, desired)
			if err != nil {
				return err
			}
			if done {
				k.State.MarkResized(unique, size)
			} else {
				waiting = true
			}
			return nil
		})
	})
	if err != nil {
		return k.volumeFailure(ctx, l, "NodeExpandVolume.NodeExpandVolume", v, pod, err)
	}
	if waiting {
		k.Trace.Note(csiclient.WithLabels(ctx, l), true, "in-use expansion: waiting for the volume to be expandable on the node; the reconciler checks the claim again on every pass")
	}
	return nil
}

// inUsePaths are GenerateExpandInUseVolumeFunc's resize paths: for a
// filesystem volume the pod's target path and the device mount path, for
// a block volume the device path the map recorded and the block mapper's
// staging path, both whether or not the driver stages.
func (k *VolumeManager) inUsePaths(pod *corev1.Pod, v *csiplugin.VolumeSpec) resizePaths {
	if !v.Block {
		return resizePaths{volumePath: k.Layout.TargetPath(string(pod.UID), v.SpecName), stagingPath: k.Layout.DeviceMountPath(v.Driver, v.Handle)}
	}
	devicePath := k.Layout.BlockPublishPath(v.SpecName, string(pod.UID))
	if real, err := filepath.EvalSymlinks(devicePath); err == nil {
		devicePath = real
	}
	return resizePaths{volumePath: devicePath, stagingPath: k.Layout.BlockStagingPath(v.SpecName)}
}
