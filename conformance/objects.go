package conformance

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// Names of the objects each scenario builds. The PV name is the spec name
// in the target path (docs/kubelet.md §1.2).
const (
	namespace      = "default"
	serviceAccount = "default"
	pvName         = "conformance-pv"
	claimName      = "conformance-claim"
	claimVolume    = "data"
	inlineVolume   = "conformance-inline"
	volumeSize     = "1Gi"
)

// source marks the objects conformance builds in errors and traces.
var source = manifests.Source{File: "(conformance)", Doc: 1}

// podSpec is the pod a scenario needs.
type podSpec struct {
	persistent bool // a claim bound to the PV
	inline     bool // an inline ephemeral volume
	readOnly   bool // ... with csi.readOnly: true
	class      *VolumeClass
	accessMode corev1.PersistentVolumeAccessMode
	fsGroup    *int64
	seLinux    *corev1.SELinuxOptions
	block      bool // the claim and PV have volumeMode: Block
	grown      bool // the PV is twice the claim's status.capacity, as the external-resizer leaves it
}

// podUID is a fixed UID per scenario, so that paths are reproducible.
func podUID(scenario string) types.UID {
	s := sha256.Sum256([]byte("csi-kubelet-sim conformance " + scenario))
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16]))
}

// buildPod adds the scenario's pod, and the PV and claim it uses, to c.
// Attach objects are added at mount time (they need the driver's answer).
func buildPod(c *manifests.Cluster, scenario, driver, nodeName string, vol *Volume, attrs map[string]string, spec podSpec) (*corev1.Pod, error) {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			// A pod's name is a lowercase DNS subdomain (the API server
			// refuses others; --apiserver creates it).
			Name:      "conformance-" + strings.ToLower(slug(scenario)),
			Namespace: namespace,
			UID:       podUID(scenario),
		},
		Spec: corev1.PodSpec{
			NodeName:           nodeName,
			ServiceAccountName: serviceAccount,
			Containers:         []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if len(pod.Name) > 63 {
		pod.Name = pod.Name[:63]
	}
	if spec.fsGroup != nil || spec.seLinux != nil {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: spec.fsGroup, SELinuxOptions: spec.seLinux}
	}
	if spec.persistent {
		if err := addClaim(c, driver, vol, spec); err != nil {
			return nil, err
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claimVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
		}})
	}
	if spec.inline {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: inlineVolume, VolumeSource: corev1.VolumeSource{
			CSI: &corev1.CSIVolumeSource{Driver: driver, VolumeAttributes: maps.Clone(attrs)},
		}})
		if spec.readOnly {
			ro := true
			pod.Spec.Volumes[len(pod.Spec.Volumes)-1].CSI.ReadOnly = &ro
		}
	}
	for i, v := range pod.Spec.Volumes {
		if spec.block && v.PersistentVolumeClaim != nil {
			pod.Spec.Containers[0].VolumeDevices = append(pod.Spec.Containers[0].VolumeDevices,
				corev1.VolumeDevice{Name: v.Name, DevicePath: fmt.Sprintf("/dev/xvda%d", i)})
			continue
		}
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: v.Name, MountPath: fmt.Sprintf("/data%d", i)})
	}
	if err := c.Add(pod, source); err != nil {
		return nil, err
	}
	return pod, nil
}

// addClaim adds the PV (the run's volume) and a claim bound to it, as the
// external-provisioner (or an administrator) and the PV controller leave
// them.
func addClaim(c *manifests.Cluster, driver string, vol *Volume, spec podSpec) error {
	mode, class := spec.accessMode, spec.class
	if mode == "" {
		mode = corev1.ReadWriteOnce
	}
	fs := corev1.PersistentVolumeFilesystem
	if spec.block {
		fs = corev1.PersistentVolumeBlock
	}
	size := class.size()
	pvSize := size.DeepCopy()
	if spec.grown {
		pvSize.Add(size)
	}
	pv := &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: pvSize},
			VolumeMode:  &fs,
			ClaimRef:    &corev1.ObjectReference{Namespace: namespace, Name: claimName},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: vol.Handle, VolumeAttributes: maps.Clone(vol.Attributes),
			}},
		},
	}
	if class != nil {
		pv.Spec.CSI.FSType = class.FsType
		pv.Spec.MountOptions = slices.Clone(class.MountOptions)
	}
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			VolumeName: pvName, VolumeMode: &fs, AccessModes: pv.Spec.AccessModes,
			// The API server requires the request (--apiserver).
			Resources: corev1.VolumeResourceRequirements{Requests: pv.Spec.Capacity},
		},
		Status: corev1.PersistentVolumeClaimStatus{
			Phase:    corev1.ClaimBound,
			Capacity: corev1.ResourceList{corev1.ResourceStorage: size},
		},
	}
	for _, o := range []any{pv, pvc} {
		if err := c.Add(o, source); err != nil {
			return err
		}
	}
	return nil
}

// attachment is a VolumeAttachment as the attach/detach controller makes
// it and the external-attacher marks it attached, with the
// publish_context of ControllerPublishVolume as attachmentMetadata.
func attachment(name, driver, nodeName string, metadata map[string]string) *storagev1.VolumeAttachment {
	pv := pvName
	return &storagev1.VolumeAttachment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "VolumeAttachment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: driver, NodeName: nodeName,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv},
		},
		Status: storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: maps.Clone(metadata)},
	}
}
