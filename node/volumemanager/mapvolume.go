package volumemanager

// mapvolume.go follows pkg/volume/util/operationexecutor/operation_generator.go
// GenerateMapVolumeFunc.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// mapVolume is GenerateMapVolumeFunc: ReadWriteOncePod check, the mapper,
// WaitForAttach, SetUpDevice (NodeStage) unless the device is globally
// mapped, MapPodDevice (NodePublish), the kubelet's own mapping of the
// published device (MapBlockVolume), and the expansion during mount. The
// same function runs again for each republish (round > 0): the reconciler's
// remount of a block volume is the whole map operation.
func (k *VolumeManager) mapVolume(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec, round int) error {
	unique := v.UniqueName(string(pod.UID))
	labels := csiclient.Labels{Component: "kubelet", Volume: v.SpecName, Pod: podName(pod)}
	op := func(name string) csiclient.Labels {
		l := labels
		l.Operation = name
		if round > 0 {
			l.Operation = fmt.Sprintf("%s#%d", name, round)
		}
		return l
	}
	fail := func(l csiclient.Labels, event string, err error) error {
		return k.volumeFailure(ctx, l, event, v, pod, err)
	}
	if k.State.MountedElsewhere(unique, string(pod.UID)) && len(v.PV.Spec.AccessModes) == 1 && v.PV.Spec.AccessModes[0] == corev1.ReadWriteOncePod {
		return fail(labels, "MapVolume.SetUpDevice", errors.New("volume uses the ReadWriteOncePod access mode and is already in use by another pod"))
	}
	if err := k.mapper.NewBlockVolumeMapper(csiclient.WithLabels(ctx, labels), v); err != nil {
		return fail(labels, "MapVolume.NewBlockVolumeMapper initialization", err)
	}
	if k.AttachRequired(v.Driver) {
		l := op("WaitForAttach")
		if err := k.waitForAttach(csiclient.WithLabels(ctx, l), v); err != nil {
			return fail(l, "MapVolume.WaitForAttach", &csiplugin.OpError{Kind: csiplugin.Transient, Err: fmt.Errorf("%w%s", err, k.attachHint(pod))})
		}
	}
	// SetUpDevice's return value: the staging path when it staged.
	stagingPath := ""
	if !k.State.DeviceMounted(unique) {
		l := op("SetUpDevice")
		octx, cancel := k.operationContext(ctx, l)
		staged, err := k.mapper.SetUpDevice(octx, v)
		cancel()
		k.State.RecordDevice(unique, v, err)
		if err != nil {
			return fail(l, "MapVolume.SetUpDevice", err)
		}
		stagingPath = staged
	}
	l := op("MapPodDevice")
	octx, cancel := k.operationContext(ctx, l)
	defer cancel()
	publishPath, err := k.mapper.MapPodDevice(octx, pod, v)
	k.State.RecordMount(pod, unique, v, err)
	if err != nil {
		return fail(l, "MapVolume.MapPodDevice", err)
	}
	if err := k.mapper.MapBlockVolume(octx, pod, v, publishPath); err != nil {
		// After MapPodDevice a failure leaves the volume uncertain, so that
		// teardown still unpublishes it.
		k.State.RecordMount(pod, unique, v, csiplugin.AsUncertain(err))
		return fail(l, "MapVolume.MapBlockVolume", err)
	}
	// EvalHostSymlinks: a driver may publish a symlink to its device.
	devicePath := publishPath
	if real, err := filepath.EvalSymlinks(publishPath); err == nil {
		devicePath = real
	}
	l = op("NodeExpand")
	ectx, ecancel := k.operationContext(ctx, l)
	defer ecancel()
	if err := k.expandDuringMount(ectx, pod, v, resizePaths{volumePath: devicePath, stagingPath: stagingPath}); err != nil {
		k.State.RecordMount(pod, unique, v, csiplugin.AsUncertain(err))
		return k.volumeFailure(ctx, l, "MapVolume.MarkVolumeAsMounted failed while expanding volume", v, pod, err)
	}
	return nil
}
