package volumemanager

// lifecycle.go follows pkg/volume/util/operationexecutor/operation_generator.go:
// GenerateMountVolumeFunc, GenerateUnmountVolumeFunc, GenerateUnmountDeviceFunc.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager/cache"
)

// MountPod mounts every CSI volume of the pod as the kubelet's volume
// manager does when the pod lands on the node. The error is for inputs the
// kubelet could not even resolve (a claim with no PV); volume failures are
// in the result. With parallel the reconciler's way is followed: an
// operation per volume, side by side, one pending operation per volume
// (operations.go); without, the volumes are mounted in the pod's order, so
// that a trace reads as a story.
func (k *VolumeManager) MountPod(ctx context.Context, pod *corev1.Pod, parallel bool) (*PodResult, error) {
	specs, skipped, err := csiplugin.ResolveVolumes(k.Cluster, pod)
	if err != nil {
		return nil, err
	}
	res := &PodResult{Pod: pod, Skipped: skipped, Volumes: make([]VolumeResult, len(specs))}
	k.noteUnused(ctx, pod, skipped)
	if err := k.makePodDataDirs(pod); err != nil {
		return nil, err
	}
	if !parallel {
		for i, v := range specs {
			res.Volumes[i] = k.mountOne(ctx, pod, v)
		}
		k.expandInUse(ctx, pod, specs, res)
		return res, nil
	}
	var wg sync.WaitGroup
	for i, v := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res.Volumes[i] = k.mountOne(ctx, pod, v)
		}()
	}
	wg.Wait()
	k.expandInUse(ctx, pod, specs, res)
	return res, nil
}

// noteUnused says which of the pod's volumes the kubelet leaves alone
// because no container uses them, as its populator logs "Skipping unused
// volume".
func (k *VolumeManager) noteUnused(ctx context.Context, pod *corev1.Pod, skipped []csiplugin.SkippedVolume) {
	for _, sk := range skipped {
		if !sk.Unused {
			continue
		}
		l := csiclient.Labels{Component: "kubelet", Operation: "MountVolume", Volume: sk.Name, Pod: podName(pod)}
		k.Trace.Note(csiclient.WithLabels(ctx, l), false, fmt.Sprintf("skipping unused volume %q: no container, init container or ephemeral container names it in volumeMounts or volumeDevices, and the kubelet leaves unused volumes alone (docs/kubelet.md §11)", sk.Name))
	}
}

// mountOne runs the mount (or map) operation of one volume under the
// volume's operation key, with the kubelet's retries.
func (k *VolumeManager) mountOne(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec) VolumeResult {
	vr := VolumeResult{
		PodVolume:  v.PodVolume,
		SpecName:   v.SpecName,
		Driver:     v.Driver,
		Handle:     v.Handle,
		Mode:       v.Mode,
		TargetPath: k.Layout.TargetPath(string(pod.UID), v.SpecName),
	}
	l := csiclient.Labels{Component: "kubelet", Operation: "MountVolume", Volume: v.SpecName, Pod: podName(pod)}
	mount := func() error { return k.mountVolume(ctx, pod, v) }
	if v.Block {
		vr.TargetPath = k.Layout.BlockPublishPath(v.SpecName, string(pod.UID))
		mount = func() error { return k.mapVolume(ctx, pod, v, 0) }
	}
	key := operationexecutor.OperationKey{Volume: v.UniqueName(string(pod.UID))}
	k.State.NotePodVolume(string(pod.UID), key.Volume)
	k.State.InitClaimSize(key.Volume, v)
	err := k.WithRetry(ctx, l, func(int) error { return k.ops.Run(ctx, key, mount) })
	if err != nil {
		vr.Err = err
	} else {
		vr.Published = true
	}
	if v.Block {
		if _, err := os.Stat(k.Layout.BlockStagingPath(v.SpecName)); err == nil {
			vr.StagingPath = k.Layout.BlockStagingPath(v.SpecName)
		}
	} else if v.Persistent() {
		dmp := k.Layout.DeviceMountPath(v.Driver, v.Handle)
		if _, err := k.FS.LoadVolumeData(filepath.Dir(dmp)); err == nil {
			vr.StagingPath = dmp
		}
	}
	return vr
}

// makePodDataDirs is makePodDataDirs in kubelet_pods.go.
func (k *VolumeManager) makePodDataDirs(pod *corev1.Pod) error {
	dir := k.Layout.PodDir(string(pod.UID))
	if !k.State.PodHasDirs(string(pod.UID)) {
		if err := k.ClaimDir("pod "+podName(pod), dir); err != nil {
			return err
		}
	}
	k.State.MarkPodDirs(string(pod.UID))
	for _, d := range []string{dir, dir + "/volumes", dir + "/plugins"} {
		if err := k.FS.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return nil
}

// mountVolume is GenerateMountVolumeFunc: the ReadWriteOncePod check,
// WaitForAttach for attachable volumes, MountDevice unless the device is
// already globally mounted, SetUp; and the state each outcome leaves.
func (k *VolumeManager) mountVolume(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec) error {
	unique := v.UniqueName(string(pod.UID))
	labels := csiclient.Labels{Component: "kubelet", Volume: v.SpecName, Pod: podName(pod)}
	fail := func(op string, err error) error {
		return k.volumeFailure(ctx, labels, op, v, pod, err)
	}
	if v.Persistent() && k.State.MountedElsewhere(unique, string(pod.UID)) && len(v.PV.Spec.AccessModes) == 1 && v.PV.Spec.AccessModes[0] == corev1.ReadWriteOncePod {
		return fail("MountVolume.SetUp", errors.New("volume uses the ReadWriteOncePod access mode and is already in use by another pod"))
	}
	seLinuxLabel, err := k.mountSELinuxLabel(pod, v)
	if err != nil {
		return fail("AddPodToVolume", &csiplugin.OpError{Kind: csiplugin.Transient, Err: err})
	}
	if seLinuxLabel == "" {
		k.explainNoSELinux(csiclient.WithLabels(ctx, labels), pod, v)
	}
	k.explainPodInfo(csiclient.WithLabels(ctx, labels), v)
	if v.Persistent() && k.AttachRequired(v.Driver) {
		l := labels
		l.Operation = "WaitForAttach"
		if err := k.waitForAttach(csiclient.WithLabels(ctx, l), v); err != nil {
			return fail("MountVolume.WaitForAttach", &csiplugin.OpError{Kind: csiplugin.Transient, Err: fmt.Errorf("%w%s", err, k.attachHint(pod))})
		}
	}
	if v.Persistent() {
		if !k.State.DeviceMounted(unique) {
			l := labels
			l.Operation = "MountDevice"
			octx, cancel := k.operationContext(ctx, l)
			err := k.attacher.MountDevice(octx, pod, v, seLinuxLabel)
			cancel()
			k.State.RecordDevice(unique, v, err)
			if err != nil {
				return fail("MountVolume.MountDevice", err)
			}
		}
	}
	l := labels
	l.Operation = "SetUp"
	octx, cancel := k.operationContext(ctx, l)
	err = k.mounter.SetUp(octx, pod, v, csiplugin.MounterArgs{SELinuxLabel: seLinuxLabel})
	cancel()
	k.State.RecordMount(pod, unique, v, err)
	if err != nil {
		return fail("MountVolume.SetUp", err)
	}
	l.Operation = "NodeExpand"
	octx, cancel = k.operationContext(ctx, l)
	defer cancel()
	at := resizePaths{volumePath: k.Layout.TargetPath(string(pod.UID), v.SpecName), stagingPath: k.Layout.DeviceMountPath(v.Driver, v.Handle)}
	if err := k.expandDuringMount(octx, pod, v, at); err != nil {
		return k.volumeFailure(ctx, l, "MountVolume.Setup failed while expanding volume", v, pod, err)
	}
	return nil
}

// UnmountPod tears the pod's volumes down as the reconciler does once the
// pod is deleted: NodeUnpublish for each volume mounted or uncertain, then,
// for each of its devices no pod uses any more, UnmountDevice
// (NodeUnstage). It returns the failures, worded as the kubelet's events.
// With parallel the volumes are torn down side by side.
func (k *VolumeManager) UnmountPod(ctx context.Context, pod *corev1.Pod, parallel bool) []error {
	keys := k.State.PodMounts(pod)
	errs := make([]error, len(keys))
	devices := make([]string, len(keys))
	each := func(i int) {
		devices[i] = keys[i].UniqueName
		errs[i] = k.unmountOne(ctx, pod, keys[i])
	}
	if parallel {
		var wg sync.WaitGroup
		for i := range keys {
			wg.Add(1)
			go func() { defer wg.Done(); each(i) }()
		}
		wg.Wait()
	} else {
		for i := range keys {
			each(i)
		}
	}
	var out []error
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	devices = append(devices, k.State.PodVolumeNames(string(pod.UID))...)
	out = append(out, k.UnmountDevices(ctx, devices)...)
	k.State.PrunePodVolumes(string(pod.UID))
	return out
}

// unmountOne is the unmount (or unmap) operation of one pod volume, under
// the key of the volume and the pod.
func (k *VolumeManager) unmountOne(ctx context.Context, pod *corev1.Pod, key cache.MountKey) error {
	m, ok := k.State.Mount(key)
	if !ok {
		return nil
	}
	op, prefix, teardown := "TearDown", "UnmountVolume.TearDown failed", k.mounter.TearDown
	if m.Spec.Block {
		op, prefix, teardown = "UnmapPodDevice", "UnmapVolume.UnmapPodDevice failed", k.mapper.UnmapVolume
	}
	l := csiclient.Labels{Component: "kubelet", Operation: op, Volume: m.Spec.SpecName, Pod: podName(pod)}
	opKey := operationexecutor.OperationKey{Volume: key.UniqueName, Pod: key.PodUID}
	err := k.WithRetry(ctx, l, func(int) error {
		return k.ops.Run(ctx, opKey, func() error {
			octx, cancel := k.operationContext(ctx, l)
			defer cancel()
			return teardown(octx, pod, m.Spec)
		})
	})
	if err != nil {
		ve := &csiplugin.VolumeError{Operation: op, Prefix: csiplugin.EventPrefix(err, prefix), Volume: m.Spec.SpecName, Pod: podName(pod), Kind: csiplugin.KindOf(err), Err: err}
		k.Trace.Warn(csiclient.WithLabels(ctx, l), ve.Error())
		if k.forced(csiclient.WithLabels(ctx, l), err, k.volumePaths(m.Spec, key.PodUID)) {
			k.State.ForgetMount(key)
			return nil
		}
		k.keepVolume(m.Spec, key.PodUID)
		return ve
	}
	k.State.ForgetMount(key)
	return nil
}

// UnmountDevices is the reconciler's unmountDetachDevices for the given
// devices: only those that no pod mounts any more.
func (k *VolumeManager) UnmountDevices(ctx context.Context, among []string) []error {
	var errs []error
	for _, unique := range k.State.DevicesNotInUse(among) {
		if err := k.unmountDevice1(ctx, unique); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// unmountDevice1 is the UnmountDevice (TearDownDevice) operation of one
// device, under the volume's key; the device may have found a new user
// while the operation waited for its turn.
func (k *VolumeManager) unmountDevice1(ctx context.Context, unique string) error {
	var out error
	err := k.ops.Run(ctx, operationexecutor.OperationKey{Volume: unique}, func() error {
		if len(k.State.DevicesNotInUse([]string{unique})) == 0 {
			return nil
		}
		d, _ := k.State.Device(unique)
		op, prefix := "UnmountDevice", "UnmountDevice failed"
		unmount := func(ctx context.Context) error { return k.attacher.UnmountDevice(ctx, d.Driver, d.Handle) }
		if d.Spec.Block {
			op, prefix = "TearDownDevice", "UnmapDevice.TearDownDevice failed"
			unmount = func(ctx context.Context) error { return k.mapper.UnmapDevice(ctx, d.Spec) }
		}
		l := csiclient.Labels{Component: "kubelet", Operation: op, Volume: d.Spec.SpecName}
		err := k.WithRetry(ctx, l, func(int) error {
			octx, cancel := k.operationContext(ctx, l)
			defer cancel()
			return unmount(octx)
		})
		if err != nil {
			ve := &csiplugin.VolumeError{Operation: op, Prefix: prefix, Volume: d.Spec.SpecName, Kind: csiplugin.KindOf(err), Err: err}
			k.Trace.Warn(csiclient.WithLabels(ctx, l), ve.Error())
			if k.forced(csiclient.WithLabels(ctx, l), err, k.devicePaths(d.Spec)) {
				k.State.ForgetDevice(unique)
				return nil
			}
			k.State.MarkDeviceUncertain(unique)
			k.keepDevice(d.Spec)
			out = ve
			return nil
		}
		k.State.ForgetDevice(unique)
		return nil
	})
	if err != nil {
		return err
	}
	return out
}
