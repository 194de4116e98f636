package volumemanager

// selinuxlabel.go follows pkg/kubelet/volumemanager/cache/desired_state_of_world.go
// (getSELinuxMountContext, the SELinux label of a pod volume).

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
)

// volumeSupportsSELinuxMount is util.VolumeSupportsSELinuxMount: PVs only;
// any access mode with the SELinuxMount gate (in 1.30 and 1.31 the PV still
// needed a single access mode), else exactly [ReadWriteOncePod].
func (k *VolumeManager) volumeSupportsSELinuxMount(v *csiplugin.VolumeSpec) bool {
	if !k.Release.Enabled(release.SELinuxMountReadWriteOncePod) || v.PV == nil {
		return false
	}
	modes := v.PV.Spec.AccessModes
	if k.Release.Enabled(release.SELinuxMount) {
		return k.Release.SELinuxMountAnyAccessMode() || len(modes) == 1
	}
	return len(modes) == 1 && modes[0] == corev1.ReadWriteOncePod
}

// mountSELinuxLabel is GetMountSELinuxLabel and desiredStateOfWorld
// .AddPodToVolume: the label to mount the volume with for this pod, or an
// error the kubelet reports for the pod.
func (k *VolumeManager) mountSELinuxLabel(pod *corev1.Pod, v *csiplugin.VolumeSpec) (string, error) {
	unique := v.UniqueName(string(pod.UID))
	label, pluginSupports, err := k.podSELinuxLabel(pod, v)
	if err != nil {
		return "", err
	}
	existing, known := k.State.SELinuxVolume(unique, func() *csiplugin.SELinuxVolume {
		effective := label
		if !k.volumeSupportsSELinuxMount(v) {
			effective = ""
		}
		return &csiplugin.SELinuxVolume{Effective: effective, Original: label}
	})
	if !known {
		return existing.Effective, nil
	}
	if pluginSupports && label != existing.Original && k.volumeSupportsSELinuxMount(v) {
		return "", fmt.Errorf("conflicting SELinux labels of volume %s: %q and %q", v.SpecName, existing.Original, label)
	}
	return existing.Effective, nil
}

// podSELinuxLabel is GetMountSELinuxLabel for one pod and volume.
func (k *VolumeManager) podSELinuxLabel(pod *corev1.Pod, v *csiplugin.VolumeSpec) (label string, pluginSupports bool, err error) {
	if !k.Release.Enabled(release.SELinuxMountReadWriteOncePod) || !k.SELinux.Enabled {
		return "", false, nil
	}
	pluginSupports = k.PluginSupportsSELinuxMount(v.Driver)
	var labels []string
	for _, opts := range csiplugin.ContainerSELinuxOptions(pod, v.PodVolume) {
		if l := k.SELinux.FileLabel(opts); !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	if len(labels) > 1 {
		if k.volumeSupportsSELinuxMount(v) {
			return "", false, fmt.Errorf("multiple SELinux labels found: %s", strings.Join(labels, ","))
		}
		return "", false, nil
	}
	if len(labels) == 0 {
		return "", pluginSupports, nil
	}
	label = labels[0]
	if k.Release.Enabled(release.SELinuxChangePolicy) && pod.Spec.SecurityContext != nil &&
		pod.Spec.SecurityContext.SELinuxChangePolicy != nil &&
		*pod.Spec.SecurityContext.SELinuxChangePolicy == corev1.SELinuxChangePolicyRecursive {
		label = ""
	}
	if !pluginSupports {
		label = ""
	}
	return label, pluginSupports, nil
}
