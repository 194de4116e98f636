package manifests

import (
	"crypto/sha256"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Defaults applies what the API server and its admission plugins fill in
// before a kubelet ever sees an object.
type Defaults struct {
	// PreventPodSchedulingIfMissing: the VolumeLimitScaling gate (on from
	// 1.37) defaults spec.preventPodSchedulingIfMissing to false.
	PreventPodSchedulingIfMissing bool
	// Dropped lists the CSIDriver fields whose gate is off in the release:
	// the API server's strategy drops them on create
	// (pkg/registry/storage/csidriver/strategy.go), so no kubelet sees them.
	Dropped DroppedFields
	// AttachRequiredPath: from 1.38 the API server names attachRequired's
	// errors spec.attachRequired; up to 1.37 spec.attachedRequired (sic).
	AttachRequiredPath bool
}

// DroppedFields are gated CSIDriver fields the API server removes.
type DroppedFields struct {
	ServiceAccountTokenInSecrets       bool // CSIServiceAccountTokenSecrets off (before 1.35)
	SELinuxMount                       bool // SELinuxMountReadWriteOncePod off
	NodeAllocatableUpdatePeriodSeconds bool // MutableCSINodeAllocatableCount off
	PreventPodSchedulingIfMissing      bool // VolumeLimitScaling off
}

// droppedSet names the gated fields set in o that the API server drops.
func (d Defaults) droppedSet(o *storagev1.CSIDriver) []string {
	var out []string
	s := o.Spec
	for _, f := range []struct {
		dropped, set bool
		path         string
	}{
		{d.Dropped.ServiceAccountTokenInSecrets, s.ServiceAccountTokenInSecrets != nil, "spec.serviceAccountTokenInSecrets"},
		{d.Dropped.SELinuxMount, s.SELinuxMount != nil, "spec.seLinuxMount"},
		{d.Dropped.NodeAllocatableUpdatePeriodSeconds, s.NodeAllocatableUpdatePeriodSeconds != nil, "spec.nodeAllocatableUpdatePeriodSeconds"},
		{d.Dropped.PreventPodSchedulingIfMissing, s.PreventPodSchedulingIfMissing != nil, "spec.preventPodSchedulingIfMissing"},
	} {
		if f.dropped && f.set {
			out = append(out, f.path)
		}
	}
	return out
}

// Apply applies the API server's defaults to an object, as after a
// mutating webhook's patch.
func (d Defaults) Apply(obj any) error { return d.apply(obj) }

func (d Defaults) apply(obj any) error {
	// The API server clears the namespace of a cluster-scoped object on
	// create (rest.BeforeCreate, EnsureObjectNamespaceMatchesRequestNamespace
	// in apiserver registry/rest/meta.go) rather than refusing it.
	switch o := obj.(type) {
	case *storagev1.CSIDriver:
		o.Namespace = ""
	case *storagev1.VolumeAttachment:
		o.Namespace = ""
	case *corev1.PersistentVolume:
		o.Namespace = ""
	case *corev1.Node:
		o.Namespace = ""
	case *corev1.Namespace:
		o.Namespace = ""
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		o.Namespace = ""
		SetWebhookConfigurationDefaults(o)
	}
	switch o := obj.(type) {
	case *storagev1.CSIDriver:
		d.csiDriver(o)
	case *corev1.Pod:
		defaultPod(o)
	case *storagev1.StorageClass:
		defaultStorageClass(o)
	case *corev1.PersistentVolumeClaim:
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		// The API server assigns every object a UID; the provisioner
		// names a claim's volume after it.
		if o.UID == "" {
			o.UID = StableUID("PersistentVolumeClaim", o.Namespace, o.Name)
		}
		if o.Spec.VolumeMode == nil {
			fs := corev1.PersistentVolumeFilesystem
			o.Spec.VolumeMode = &fs
		}
	case *corev1.PersistentVolume:
		if o.Spec.VolumeMode == nil {
			fs := corev1.PersistentVolumeFilesystem
			o.Spec.VolumeMode = &fs
		}
	case *corev1.Secret:
		defaultSecret(o)
	case *corev1.ServiceAccount:
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		if o.UID == "" {
			o.UID = StableUID("ServiceAccount", o.Namespace, o.Name)
		}
	}
	return nil
}

// csiDriver is the API server's strategy (gated fields dropped) and
// SetDefaults_CSIDriver (pkg/apis/storage/v1/defaults.go), docs/kubelet.md §14.2.
func (d Defaults) csiDriver(o *storagev1.CSIDriver) {
	s := &o.Spec
	if d.Dropped.ServiceAccountTokenInSecrets {
		s.ServiceAccountTokenInSecrets = nil
	}
	if d.Dropped.SELinuxMount {
		s.SELinuxMount = nil
	}
	if d.Dropped.NodeAllocatableUpdatePeriodSeconds {
		s.NodeAllocatableUpdatePeriodSeconds = nil
	}
	if d.Dropped.PreventPodSchedulingIfMissing {
		s.PreventPodSchedulingIfMissing = nil
	}
	if s.AttachRequired == nil {
		s.AttachRequired = ptr(true)
	}
	if s.PodInfoOnMount == nil {
		s.PodInfoOnMount = ptr(false)
	}
	if s.StorageCapacity == nil {
		s.StorageCapacity = ptr(false)
	}
	if s.FSGroupPolicy == nil {
		p := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
		s.FSGroupPolicy = &p
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if s.RequiresRepublish == nil {
		s.RequiresRepublish = ptr(false)
	}
	if s.SELinuxMount == nil && !d.Dropped.SELinuxMount {
		s.SELinuxMount = ptr(false)
	}
	if d.PreventPodSchedulingIfMissing && s.PreventPodSchedulingIfMissing == nil {
		s.PreventPodSchedulingIfMissing = ptr(false)
	}
}

// defaultPod fills what the API server does on create: the namespace of
// the request, a UID, and the ServiceAccount admission plugin's "default".
// The UID is derived from namespace and name so that paths are the same on
// every run; --pod-uid or metadata.uid override it.
func defaultPod(p *corev1.Pod) {
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	if p.UID == "" {
		p.UID = StableUID("Pod", p.Namespace, p.Name)
	}
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = p.Spec.DeprecatedServiceAccount
	}
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = "default"
	}
}

// defaultSecret merges stringData into data, as the API server does on
// write (stringData wins), and defaults the type to Opaque.
func defaultSecret(s *corev1.Secret) {
	if s.Namespace == "" {
		s.Namespace = "default"
	}
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// StableUID derives a UUID-shaped UID from an object's identity.
func StableUID(kind, namespace, name string) types.UID {
	h := sha256.Sum256([]byte("csi-kubelet-sim/" + kind + "/" + namespace + "/" + name))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]))
}

func ptr[T any](v T) *T { return &v }
