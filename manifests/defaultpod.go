package manifests

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultPodName is the pod used when the manifests hold none.
const DefaultPodName = "csi-kubelet-sim"

// DefaultPod describes the pod used when no Pod is given.
type DefaultPod struct {
	Driver       string
	UID          types.UID // empty: derived from the name
	VolumeHandle string    // empty: derived from the driver name
	NodeName     string
	// AttachmentName computes the VolumeAttachment name the kubelet reads.
	AttachmentName func(handle, driver, node string) string
	// Provision: the persistent volume is a claim of a StorageClass of
	// the driver and no PV (DefaultClassName unless the input has a
	// class of the driver), for the external-provisioner to create, as
	// for a claim of the input; otherwise a PV with VolumeHandle, which a
	// driver that makes its own volumes does not know.
	Provision bool
}

// DefaultPodSource is where the default pod's objects come from.
var DefaultPodSource = Source{File: "(default pod)", Doc: 1}

// Names of the default pod's persistent volume objects.
const (
	DefaultClaimName    = "sim-claim"
	DefaultPVName       = "sim-pv"
	DefaultVolumeHandle = "sim-volume-1"
	// DefaultClassName is the StorageClass made for a provisioned default
	// volume when the input has none of the driver.
	DefaultClassName = "csi-kubelet-sim"
	// DefaultClaimSize is what the provisioned default claim requests.
	DefaultClaimSize = "1Gi"
)

// AddDefaultPod adds a pod with one volume per lifecycle mode the driver's
// CSIDriver allows (only Persistent when there is no CSIDriver): an inline
// volume, and a claim bound to a PV. When attach is required it also adds
// the attached VolumeAttachment the attach/detach controller and the
// external-attacher would have made.
func (c *Cluster) AddDefaultPod(d DefaultPod) (*corev1.Pod, error) {
	// The driver name and UID come from flags or the driver, not from a
	// manifest the loader checked; both become path segments.
	if err := ValidateDriverName(d.Driver, field.NewPath("driver")); err != nil {
		return nil, fmt.Errorf("default pod: %w", err)
	}
	if err := ValidatePodUID(string(d.UID), field.NewPath("--pod-uid")); err != nil {
		return nil, err
	}
	modes := []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	attach := true
	if obj, ok := c.CSIDriver(d.Driver); ok {
		modes = obj.Spec.VolumeLifecycleModes
		attach = obj.Spec.AttachRequired == nil || *obj.Spec.AttachRequired
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: DefaultPodName, Namespace: "default", UID: d.UID},
		Spec: corev1.PodSpec{
			NodeName:   d.NodeName,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	defaultPod(pod)
	src := DefaultPodSource
	for _, m := range modes {
		switch m {
		case storagev1.VolumeLifecycleEphemeral:
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "inline", VolumeSource: corev1.VolumeSource{
				CSI: &corev1.CSIVolumeSource{Driver: d.Driver},
			}})
		case storagev1.VolumeLifecyclePersistent:
			if d.Provision {
				if err := c.addProvisionedClaim(pod, d, src); err != nil {
					return nil, err
				}
				continue
			}
			handle := d.VolumeHandle
			if handle == "" {
				handle = DefaultVolumeHandle
			}
			if err := c.addDefaultClaim(pod, d, handle, attach, src); err != nil {
				return nil, err
			}
		}
	}
	for i, v := range pod.Spec.Volumes {
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: v.Name, MountPath: fmt.Sprintf("/data%d", i)})
	}
	if err := c.Add(pod, src); err != nil {
		return nil, err
	}
	return pod, nil
}

func (c *Cluster) addDefaultClaim(pod *corev1.Pod, d DefaultPod, handle string, attach bool, src Source) error {
	fs := corev1.PersistentVolumeFilesystem
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultPVName},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:  &fs,
			ClaimRef:    &corev1.ObjectReference{Namespace: pod.Namespace, Name: DefaultClaimName},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: d.Driver, VolumeHandle: handle,
			}},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultClaimName, Namespace: pod.Namespace},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv.Name, VolumeMode: &fs, AccessModes: pv.Spec.AccessModes},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	for _, o := range []any{pv, pvc} {
		if err := c.Add(o, src); err != nil {
			return err
		}
	}
	if attach && d.AttachmentName != nil {
		name := d.AttachmentName(handle, d.Driver, d.NodeName)
		if _, ok := c.VolumeAttachment(name); !ok {
			pvName := pv.Name
			va := &storagev1.VolumeAttachment{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: storagev1.VolumeAttachmentSpec{Attacher: d.Driver, NodeName: d.NodeName,
					Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
				Status: storagev1.VolumeAttachmentStatus{Attached: true},
			}
			if err := c.Add(va, src); err != nil {
				return err
			}
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name},
	}})
	return nil
}

// addProvisionedClaim adds a claim with no volume, of the input's
// StorageClass of the driver or of one made here: the sample
// fixtures/samples/provision, the path a user's own claim takes. The
// attachment, when the CSIDriver requires one, is the attacher's to make
// once the volume exists.
func (c *Cluster) addProvisionedClaim(pod *corev1.Pod, d DefaultPod, src Source) error {
	sc := c.DriverClass(d.Driver)
	if sc == nil {
		sc = &storagev1.StorageClass{
			TypeMeta:    metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
			ObjectMeta:  metav1.ObjectMeta{Name: DefaultClassName},
			Provisioner: d.Driver,
		}
		defaultStorageClass(sc)
		if err := c.Add(sc, src); err != nil {
			return err
		}
	}
	fs := corev1.PersistentVolumeFilesystem
	name := sc.Name
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: DefaultClaimName, Namespace: pod.Namespace,
			UID: StableUID("PersistentVolumeClaim", pod.Namespace, DefaultClaimName)},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &name,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       &fs,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(DefaultClaimSize),
			}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	if err := c.Add(pvc, src); err != nil {
		return err
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name},
	}})
	return nil
}

// DriverClass is the input's StorageClass for the driver: the default
// class (storageclass.kubernetes.io/is-default-class) among them, else
// the first by name; nil when there is none.
func (c *Cluster) DriverClass(driver string) *storagev1.StorageClass {
	var first *storagev1.StorageClass
	for _, sc := range c.StorageClasses() {
		if sc.Provisioner != driver {
			continue
		}
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			return sc
		}
		if first == nil {
			first = sc
		}
	}
	return first
}
