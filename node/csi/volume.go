package csi

// volume.go follows pkg/volume/plugins.go (volume.Spec) and
// pkg/volume/util (GetUniqueVolumeName): the volume spec the plugin is given.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// VolumeSpec is volume.Spec as the CSI plugin reads it: one CSI volume of a
// pod, from an inline csi source or a claim bound to a CSI PV.
type VolumeSpec struct {
	PodVolume string // the name in pod.spec.volumes
	// SpecName is volume.Spec.Name(): the PV name for a claim, the pod's
	// volume name for an inline volume. Paths use it.
	SpecName   string
	Driver     string
	Handle     string
	Mode       storagev1.VolumeLifecycleMode
	ReadOnly   bool
	FSType     string
	Attributes map[string]string
	// PV is set for persistent volumes, nil for inline ones.
	PV *corev1.PersistentVolume
	// Block: volumeMode Block, mapped rather than mounted.
	Block bool
	// PVC is the claim bound to PV.
	PVC              *corev1.PersistentVolumeClaim
	StageSecretRef   *corev1.SecretReference
	PublishSecretRef *corev1.SecretReference
}

func (v *VolumeSpec) Persistent() bool { return v.PV != nil }

// AccessMode is the first of the PV's access modes, ReadWriteOnce when it
// has none, and always ReadWriteOnce for inline volumes (SetUpAt, MountDevice).
func (v *VolumeSpec) AccessMode() corev1.PersistentVolumeAccessMode {
	if v.PV != nil && len(v.PV.Spec.AccessModes) > 0 {
		return v.PV.Spec.AccessModes[0]
	}
	return corev1.ReadWriteOnce
}

// MountOptions are the PV's spec.mountOptions; inline volumes have none.
func (v *VolumeSpec) MountOptions() []string {
	if v.PV == nil {
		return nil
	}
	return v.PV.Spec.MountOptions
}

// UniqueName is the kubelet's key for the volume in its caches.
func (v *VolumeSpec) UniqueName(podUID string) string {
	if v.Persistent() {
		return rootdir.UniqueVolumeName(v.Driver, v.Handle)
	}
	return rootdir.PluginName + "/" + podUID + "-" + v.PodVolume
}

// SkippedVolume is a pod volume the simulation does not mount, and why.
type SkippedVolume struct {
	Name   string
	Reason string
	// Unused: no container uses the volume.
	Unused bool
}

// unusedVolumeReason is why the kubelet leaves a volume that no container
// names alone (docs/kubelet.md §11).
const unusedVolumeReason = "unused: no container, init container or ephemeral container names it in volumeMounts or volumeDevices"

// usedVolumes is util.GetPodVolumeNames: the names of the pod's volumes
// that a container (init, regular or ephemeral) mounts or maps. The
// desired-state populator skips every other volume before it even looks
// at its source ("Skipping unused volume"), so an unused volume's claim
// is never read and its driver never called.
func usedVolumes(pod *corev1.Pod) map[string]bool {
	used, devices := podVolumeNames(pod)
	for name := range devices {
		used[name] = true
	}
	return used
}

// ResolveVolumes finds the CSI volumes of a pod as the kubelet's
// desired-state populator does (processPodVolumes, createVolumeSpec,
// getPVCExtractPV, getPVSpec): unused volumes skipped first, claims to
// bound PVs, readOnly from the pod's claim source.
func ResolveVolumes(c *manifests.Cluster, pod *corev1.Pod) ([]*VolumeSpec, []SkippedVolume, error) {
	var specs []*VolumeSpec
	var skipped []SkippedVolume
	podSrc := c.SourceOf("Pod", pod.Namespace, pod.Name)
	used := usedVolumes(pod)
	for i, v := range pod.Spec.Volumes {
		switch {
		case !used[v.Name]:
			skipped = append(skipped, SkippedVolume{Name: v.Name, Reason: unusedVolumeReason, Unused: true})
		case v.CSI != nil:
			specs = append(specs, inlineSpec(pod, v))
		case v.PersistentVolumeClaim != nil, v.Ephemeral != nil:
			// A generic ephemeral volume's claim is <pod>-<volume>.
			claim, readOnly := pod.Name+"-"+v.Name, false
			if v.PersistentVolumeClaim != nil {
				claim, readOnly = v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.ReadOnly
			}
			spec, reason, err := claimSpec(c, pod, v.Name, claim, readOnly)
			if err != nil {
				return nil, nil, &manifests.InputError{Source: podSrc, Err: fmt.Errorf("spec.volumes[%d] (%s): %w", i, v.Name, err)}
			}
			if spec == nil {
				skipped = append(skipped, SkippedVolume{Name: v.Name, Reason: reason})
				continue
			}
			specs = append(specs, spec)
		default:
			skipped = append(skipped, SkippedVolume{Name: v.Name, Reason: "not a CSI volume"})
		}
	}
	return specs, skipped, nil
}

func inlineSpec(pod *corev1.Pod, v corev1.Volume) *VolumeSpec {
	s := &VolumeSpec{
		PodVolume:  v.Name,
		SpecName:   v.Name,
		Driver:     v.CSI.Driver,
		Handle:     rootdir.InlineVolumeHandle(string(pod.UID), v.Name),
		Mode:       storagev1.VolumeLifecycleEphemeral,
		Attributes: v.CSI.VolumeAttributes,
	}
	if v.CSI.ReadOnly != nil {
		s.ReadOnly = *v.CSI.ReadOnly
	}
	if v.CSI.FSType != nil {
		s.FSType = *v.CSI.FSType
	}
	if ref := v.CSI.NodePublishSecretRef; ref != nil {
		// Inline secrets are read in the pod's namespace.
		s.PublishSecretRef = &corev1.SecretReference{Name: ref.Name, Namespace: pod.Namespace}
	}
	return s
}

func claimSpec(c *manifests.Cluster, pod *corev1.Pod, podVolume, claim string, readOnly bool) (*VolumeSpec, string, error) {
	pvc, ok := c.PersistentVolumeClaim(pod.Namespace, claim)
	if !ok {
		return nil, "", fmt.Errorf("error processing PVC %s/%s: persistentvolumeclaims %q not found", pod.Namespace, claim, claim)
	}
	pvcSrc := c.SourceOf("PersistentVolumeClaim", pvc.Namespace, pvc.Name)
	// An empty status is taken as Bound: manifests written by hand rarely
	// carry the status the PV controller would set.
	if pvc.Spec.VolumeName == "" || (pvc.Status.Phase != "" && pvc.Status.Phase != corev1.ClaimBound) {
		return nil, "", &manifests.InputError{Source: pvcSrc, Err: fmt.Errorf(
			"spec.volumeName: the claim names no PersistentVolume: PVC %s/%s has non-bound phase (%q) or empty pvc.Spec.VolumeName (%q)",
			pvc.Namespace, pvc.Name, pvc.Status.Phase, pvc.Spec.VolumeName)}
	}
	pv, ok := c.PersistentVolume(pvc.Spec.VolumeName)
	if !ok {
		return nil, "", &manifests.InputError{Source: pvcSrc, Err: fmt.Errorf(
			"spec.volumeName: PersistentVolume %q not found", pvc.Spec.VolumeName)}
	}
	if ref := pv.Spec.ClaimRef; ref != nil && (ref.Name != pvc.Name || (ref.Namespace != "" && ref.Namespace != pvc.Namespace)) {
		pvSrc := c.SourceOf("PersistentVolume", "", pv.Name)
		return nil, "", &manifests.InputError{Source: pvSrc, Err: fmt.Errorf(
			"spec.claimRef: PV %s is bound to %s/%s, not to claim %s/%s", pv.Name, ref.Namespace, ref.Name, pvc.Namespace, pvc.Name)}
	}
	if err := volumeModeErr(pod, podVolume, pv); err != nil {
		return nil, "", err
	}
	if pv.Spec.CSI == nil {
		return nil, fmt.Sprintf("PV %s is not a CSI volume", pv.Name), nil
	}
	csiSrc := pv.Spec.CSI
	return &VolumeSpec{
		PodVolume:        podVolume,
		SpecName:         pv.Name,
		Driver:           csiSrc.Driver,
		Handle:           csiSrc.VolumeHandle,
		Mode:             storagev1.VolumeLifecyclePersistent,
		ReadOnly:         readOnly, // pv.spec.csi.readOnly is not read by the kubelet
		FSType:           csiSrc.FSType,
		Attributes:       csiSrc.VolumeAttributes,
		PV:               pv,
		PVC:              pvc,
		Block:            pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock,
		StageSecretRef:   csiSrc.NodeStageSecretRef,
		PublishSecretRef: csiSrc.NodePublishSecretRef,
	}, "", nil
}
