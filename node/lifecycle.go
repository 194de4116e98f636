package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// mountStatus is what the kubelet's actual state of the world holds for a
// device or a pod's mount.
type mountStatus int

const (
	statusMounted mountStatus = iota
	statusUncertain
)

type deviceState struct {
	driver, handle string
	spec           *volumeSpec
	status         mountStatus
}

type mountKey struct {
	podUID, uniqueName string
}

type mountState struct {
	pod    *corev1.Pod
	spec   *volumeSpec
	status mountStatus
}

// VolumeResult is what happened to one CSI volume of a pod.
type VolumeResult struct {
	PodVolume   string
	SpecName    string
	Driver      string
	Handle      string
	Mode        storagev1.VolumeLifecycleMode
	TargetPath  string
	StagingPath string // empty when the volume is not staged
	Published   bool
	Err         error // a *VolumeError
}

// PodResult is what mounting a pod's volumes did.
type PodResult struct {
	Pod     *corev1.Pod
	Volumes []VolumeResult
	Skipped []SkippedVolume
}

// Failed tells whether any volume failed to mount.
func (r *PodResult) Failed() bool {
	for _, v := range r.Volumes {
		if v.Err != nil {
			return true
		}
	}
	return false
}

// MountPod mounts every CSI volume of the pod as the kubelet's volume
// manager does when the pod lands on the node. The kubelet mounts volumes
// in parallel and retries failures with backoff; the simulation mounts
// them in the pod's order, one attempt each. The error is for inputs the
// kubelet could not even resolve (a claim with no PV); volume failures are
// in the result.
func (k *Kubelet) MountPod(ctx context.Context, pod *corev1.Pod) (*PodResult, error) {
	specs, skipped, err := resolveVolumes(k.cluster, pod)
	if err != nil {
		return nil, err
	}
	res := &PodResult{Pod: pod, Skipped: skipped}
	if err := k.makePodDataDirs(pod); err != nil {
		return nil, err
	}
	for _, v := range specs {
		vr := VolumeResult{
			PodVolume:  v.PodVolume,
			SpecName:   v.SpecName,
			Driver:     v.Driver,
			Handle:     v.Handle,
			Mode:       v.Mode,
			TargetPath: k.paths.TargetPath(string(pod.UID), v.SpecName),
		}
		l := csiclient.Labels{Component: "kubelet", Operation: "MountVolume", Volume: v.SpecName, Pod: podName(pod)}
		mount := k.mountVolume
		if v.Block {
			vr.TargetPath = k.paths.BlockPublishPath(v.SpecName, string(pod.UID))
			mount = func(ctx context.Context, pod *corev1.Pod, v *volumeSpec) error { return k.mapVolume(ctx, pod, v, 0) }
		}
		if err := k.withRetry(ctx, l, func(int) error { return mount(ctx, pod, v) }); err != nil {
			vr.Err = err
		} else {
			vr.Published = true
		}
		if v.Block {
			if _, err := os.Stat(k.paths.BlockStagingPath(v.SpecName)); err == nil {
				vr.StagingPath = k.paths.BlockStagingPath(v.SpecName)
			}
		} else if v.persistent() {
			dmp := k.paths.DeviceMountPath(v.Driver, v.Handle)
			if _, err := loadVolumeData(filepath.Dir(dmp)); err == nil {
				vr.StagingPath = dmp
			}
		}
		res.Volumes = append(res.Volumes, vr)
	}
	return res, nil
}

// makePodDataDirs is makePodDataDirs in kubelet_pods.go.
func (k *Kubelet) makePodDataDirs(pod *corev1.Pod) error {
	dir := k.paths.PodDir(string(pod.UID))
	k.podDirs[string(pod.UID)] = true
	for _, d := range []string{dir, dir + "/volumes", dir + "/plugins"} {
		if err := k.fs.mkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return nil
}

func podName(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// mountVolume is GenerateMountVolumeFunc: the ReadWriteOncePod check,
// WaitForAttach for attachable volumes, MountDevice unless the device is
// already globally mounted, SetUp; and the state each outcome leaves.
func (k *Kubelet) mountVolume(ctx context.Context, pod *corev1.Pod, v *volumeSpec) error {
	unique := v.uniqueName(string(pod.UID))
	labels := csiclient.Labels{Component: "kubelet", Volume: v.SpecName, Pod: podName(pod)}
	fail := func(op string, err error) error {
		return k.volumeFailure(ctx, labels, op, v, pod, err)
	}
	if v.persistent() && k.mountedElsewhere(unique, pod) && len(v.PV.Spec.AccessModes) == 1 && v.PV.Spec.AccessModes[0] == corev1.ReadWriteOncePod {
		return fail("MountVolume.SetUp", errors.New("volume uses the ReadWriteOncePod access mode and is already in use by another pod"))
	}
	seLinuxLabel, err := k.mountSELinuxLabel(pod, v)
	if err != nil {
		return fail("AddPodToVolume", &opError{kind: Transient, err: err})
	}
	if v.persistent() && k.attachRequired(v.Driver) {
		l := labels
		l.Operation = "WaitForAttach"
		if err := k.waitForAttach(csiclient.WithLabels(ctx, l), v); err != nil {
			return fail("MountVolume.WaitForAttach", &opError{kind: Transient, err: err})
		}
	}
	if v.persistent() {
		if d, ok := k.devices[unique]; !ok || d.status != statusMounted {
			l := labels
			l.Operation = "MountDevice"
			octx, cancel := k.operationContext(ctx, l)
			err := k.mountDevice(octx, pod, v, seLinuxLabel)
			cancel()
			k.recordDevice(unique, v, err)
			if err != nil {
				return fail("MountVolume.MountDevice", err)
			}
		}
	}
	l := labels
	l.Operation = "SetUp"
	octx, cancel := k.operationContext(ctx, l)
	err = k.setUp(octx, pod, v, mounterArgs{SELinuxLabel: seLinuxLabel})
	cancel()
	k.recordMount(pod, unique, v, err)
	if err != nil {
		return fail("MountVolume.SetUp", err)
	}
	l.Operation = "NodeExpand"
	octx, cancel = k.operationContext(ctx, l)
	defer cancel()
	at := resizePaths{volumePath: k.paths.TargetPath(string(pod.UID), v.SpecName), stagingPath: k.paths.DeviceMountPath(v.Driver, v.Handle)}
	if err := k.expandDuringMount(octx, pod, v, at); err != nil {
		return k.volumeFailure(ctx, l, "MountVolume.Setup failed while expanding volume", v, pod, err)
	}
	return nil
}

func (k *Kubelet) mountedElsewhere(unique string, pod *corev1.Pod) bool {
	for key := range k.mounts {
		if key.uniqueName == unique && key.podUID != string(pod.UID) {
			return true
		}
	}
	return false
}

// UnmountPod tears the pod's volumes down as the reconciler does once the
// pod is deleted: NodeUnpublish for each volume mounted or uncertain, then,
// for each device no pod uses any more, UnmountDevice (NodeUnstage). It
// returns the failures, worded as the kubelet's events.
func (k *Kubelet) UnmountPod(ctx context.Context, pod *corev1.Pod) []error {
	var errs []error
	for _, key := range k.sortedMounts(pod) {
		m := k.mounts[key]
		op, prefix, teardown := "TearDown", "UnmountVolume.TearDown failed", k.tearDown
		if m.spec.Block {
			op, prefix, teardown = "UnmapPodDevice", "UnmapVolume.UnmapPodDevice failed", k.unmapVolume
		}
		l := csiclient.Labels{Component: "kubelet", Operation: op, Volume: m.spec.SpecName, Pod: podName(pod)}
		err := k.withRetry(ctx, l, func(int) error {
			octx, cancel := k.operationContext(ctx, l)
			defer cancel()
			return teardown(octx, pod, m.spec)
		})
		if err != nil {
			ve := &VolumeError{Operation: op, Prefix: eventPrefix(err, prefix), Volume: m.spec.SpecName, Pod: podName(pod), Kind: kindOf(err), Err: err}
			k.trace.Warn(csiclient.WithLabels(ctx, l), ve.Error())
			errs = append(errs, ve)
			continue
		}
		delete(k.mounts, key)
	}
	return append(errs, k.unmountDevices(ctx)...)
}

// unmountDevices is the reconciler's unmountDetachDevices: only devices
// that no pod mounts any more.
func (k *Kubelet) unmountDevices(ctx context.Context) []error {
	var errs []error
	for _, unique := range sortedKeys(k.devices) {
		if k.deviceInUse(unique) {
			continue
		}
		d := k.devices[unique]
		op, prefix := "UnmountDevice", "UnmountDevice failed"
		unmount := func(ctx context.Context) error { return k.unmountDevice(ctx, d.driver, d.handle) }
		if d.spec.Block {
			op, prefix = "TearDownDevice", "UnmapDevice.TearDownDevice failed"
			unmount = func(ctx context.Context) error { return k.unmapDevice(ctx, d.spec) }
		}
		l := csiclient.Labels{Component: "kubelet", Operation: op, Volume: d.spec.SpecName}
		err := k.withRetry(ctx, l, func(int) error {
			octx, cancel := k.operationContext(ctx, l)
			defer cancel()
			return unmount(octx)
		})
		if err != nil {
			ve := &VolumeError{Operation: op, Prefix: prefix, Volume: d.spec.SpecName, Kind: kindOf(err), Err: err}
			k.trace.Warn(csiclient.WithLabels(ctx, l), ve.Error())
			errs = append(errs, ve)
			d.status = statusUncertain
			continue
		}
		delete(k.devices, unique)
	}
	return errs
}

func (k *Kubelet) deviceInUse(unique string) bool {
	for key := range k.mounts {
		if key.uniqueName == unique {
			return true
		}
	}
	return false
}

// sortedMounts returns the pod's mounts in a stable order (the pod's
// volume order), so traces are reproducible.
func (k *Kubelet) sortedMounts(pod *corev1.Pod) []mountKey {
	var keys []mountKey
	for key := range k.mounts {
		if key.podUID == string(pod.UID) {
			keys = append(keys, key)
		}
	}
	order := map[string]int{}
	for i, v := range pod.Spec.Volumes {
		order[v.Name] = i
	}
	slices.SortFunc(keys, func(a, b mountKey) int {
		return order[k.mounts[a].spec.PodVolume] - order[k.mounts[b].spec.PodVolume]
	})
	return keys
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}
