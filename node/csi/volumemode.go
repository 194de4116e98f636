package csi

// volumemode.go follows pkg/volume/util GetVolumeMode.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// volumeModeErr is the desired-state populator's check of a claim's PV
// against how the pod's containers use it (createVolumeSpec, every
// release 1.30 to 1.37): a volume in any container's volumeMounts must be
// a Filesystem PV, one in volumeDevices a Block PV (a PV without
// volumeMode is Filesystem). The kubelet refuses the volume and the pod
// never starts (docs/kubelet.md §18).
func volumeModeErr(pod *corev1.Pod, podVolume string, pv *corev1.PersistentVolume) error {
	mode := corev1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	mounts, devices := podVolumeNames(pod)
	var where string
	switch {
	case mounts[podVolume] && mode != corev1.PersistentVolumeFilesystem:
		where = "volumeMounts"
	case devices[podVolume] && mode != corev1.PersistentVolumeBlock:
		where = "volumeDevices"
	default:
		return nil
	}
	return fmt.Errorf("pod %s/%s: volume %s has volumeMode %s, but is specified in %s (PV %s): the kubelet refuses the volume and the pod never starts (docs/kubelet.md §18)",
		pod.Namespace, pod.Name, podVolume, mode, where, pv.Name)
}

// podVolumeNames is util.GetPodVolumeNames: the volumes that any
// container (init, regular, ephemeral) names in volumeMounts, and those
// it names in volumeDevices.
func podVolumeNames(pod *corev1.Pod) (mounts, devices map[string]bool) {
	mounts, devices = map[string]bool{}, map[string]bool{}
	note := func(ms []corev1.VolumeMount, ds []corev1.VolumeDevice) {
		for _, m := range ms {
			mounts[m.Name] = true
		}
		for _, d := range ds {
			devices[d.Name] = true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		note(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.Containers {
		note(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		note(c.VolumeMounts, c.VolumeDevices)
	}
	return mounts, devices
}
