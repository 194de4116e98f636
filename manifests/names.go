package manifests

import (
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The kubelet joins object names into paths under its root dir (pods/<uid>,
// volumes/kubernetes.io~csi/<pv or volume name>, plugins/kubernetes.io/csi/
// <driver>/…, volumeDevices/<pv>/…). It can, because the API server never
// lets a name hold a "/" or be "..". The simulator reads manifests no API
// server saw, so it checks each name that reaches a path, or names an object
// it looks up, as the API server does on create, before any path is built.

// ValidateDriverName is ValidateCSIDriverName (pkg/apis/core/validation),
// the API server's check of spec.csi.driver in a PV, of csi.driver in an
// inline volume, of spec.attacher in a VolumeAttachment and of a CSINode
// driver name: at most 63 characters, and a DNS-1123 subdomain once
// lower-cased, so never a "/" or a leading ".". fld names the field or
// flag in the message.
func ValidateDriverName(name string, fld *field.Path) error {
	return joinErrs(driverNameErrs(name, fld))
}

func driverNameErrs(name string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		return append(errs, field.Required(fld, ""))
	}
	if len(name) > 63 {
		errs = append(errs, field.TooLong(fld, "", 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	return errs
}

// ValidatePodUID checks a pod UID taken from a manifest or --pod-uid; an
// empty one is fine (the simulator derives it from the pod's name). The API
// server ignores a UID sent on create and assigns a UUID, so it has no rule
// to follow here: the UID is the simulator's own input, and since it
// becomes the directory pods/<uid>, it must be a DNS-1123 subdomain once
// lower-cased (every UUID is one, in either case): no "/", no "..", no
// leading ".", at most 253 characters.
func ValidatePodUID(uid string, fld *field.Path) error {
	return joinErrs(uidErrs(uid, fld))
}

func uidErrs(uid string, fld *field.Path) field.ErrorList {
	if uid == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(uid)) {
		errs = append(errs, field.Invalid(fld, uid, msg))
	}
	return errs
}

// ValidateSpecName checks a volume's spec name, the path segment the
// kubelet names a volume's directories by: a PV name (NameIsDNSSubdomain)
// or, for an inline volume, the pod's volume name (a DNS-1123 label, which
// is also a subdomain). For names read back from disk (vol_data.json)
// rather than from a manifest.
func ValidateSpecName(name string, fld *field.Path) error {
	if name == "" {
		return field.Required(fld, "")
	}
	return joinErrs(nameErrs(name, fld, apivalidation.NameIsDNSSubdomain))
}

// ObjectNameErrors are the API server's checks of an object's names (the
// name functions ValidateObjectMeta is given for the kind, the namespace,
// and the names inside the spec that the kubelet reads), plus the
// simulator's own rules for pod UIDs, SELinux options and mount options.
// Messages start with the field path. A CSIDriver's name is checked with
// the rest of it by CSIDriverErrors.
func ObjectNameErrors(obj any) []string {
	name := field.NewPath("metadata", "name")
	var errs field.ErrorList
	switch o := obj.(type) {
	case *storagev1.VolumeAttachment:
		// ValidateVolumeAttachment (ValidateClassName is
		// NameIsDNSSubdomain) and ValidateVolumeAttachmentV1.
		errs = nameErrs(o.Name, name, apivalidation.NameIsDNSSubdomain)
		errs = append(errs, driverNameErrs(o.Spec.Attacher, field.NewPath("spec", "attacher"))...)
		if pv := o.Spec.Source.PersistentVolumeName; pv != nil && *pv != "" {
			errs = append(errs, nameErrs(*pv, field.NewPath("spec", "source", "persistentVolumeName"), apivalidation.NameIsDNSSubdomain)...)
		}
	case *corev1.Node:
		errs = nameErrs(o.Name, name, apivalidation.NameIsDNSSubdomain) // ValidateNodeName
	case *corev1.Secret:
		errs = namespacedErrs(o.Name, o.Namespace)
	case *corev1.ServiceAccount:
		errs = namespacedErrs(o.Name, o.Namespace)
	case *corev1.PersistentVolumeClaim:
		errs = namespacedErrs(o.Name, o.Namespace)
	case *corev1.PersistentVolume:
		// ValidatePersistentVolumeName is NameIsDNSSubdomain.
		errs = nameErrs(o.Name, name, apivalidation.NameIsDNSSubdomain)
		if c := o.Spec.CSI; c != nil {
			errs = append(errs, driverNameErrs(c.Driver, field.NewPath("spec", "csi", "driver"))...)
		}
		errs = append(errs, mountOptionErrs(o.Spec.MountOptions, field.NewPath("spec", "mountOptions"))...)
	case *corev1.Pod:
		errs = podNameErrs(o)
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// podNameErrs: ValidatePodName (NameIsDNSSubdomain), the namespace, the
// UID, each volume's name (ValidateVolumes: a DNS-1123 label) and inline
// driver, and the SELinux options of the pod and its containers.
func podNameErrs(p *corev1.Pod) field.ErrorList {
	errs := namespacedErrs(p.Name, p.Namespace)
	errs = append(errs, uidErrs(string(p.UID), field.NewPath("metadata", "uid"))...)
	vols := field.NewPath("spec", "volumes")
	for i, v := range p.Spec.Volumes {
		if v.Name != "" {
			for _, msg := range validation.IsDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(vols.Index(i).Child("name"), v.Name, msg))
			}
		}
		if v.CSI != nil && v.CSI.Driver != "" {
			errs = append(errs, driverNameErrs(v.CSI.Driver, vols.Index(i).Child("csi", "driver"))...)
		}
	}
	errs = append(errs, podSELinuxErrs(p)...)
	return errs
}

// namespacedErrs: the name a DNS-1123 subdomain (the Pod, PVC, Secret and
// ServiceAccount name functions all are NameIsDNSSubdomain), the namespace
// a DNS-1123 label (ValidateNamespaceName).
func namespacedErrs(name, namespace string) field.ErrorList {
	errs := nameErrs(name, field.NewPath("metadata", "name"), apivalidation.NameIsDNSSubdomain)
	if namespace != "" {
		for _, msg := range apivalidation.ValidateNamespaceName(namespace, false) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), namespace, msg))
		}
	}
	return errs
}

// nameErrs is ValidateObjectMeta's check of metadata.name, or the same
// check of a name field elsewhere; an empty name is requireName's matter.
func nameErrs(name string, fld *field.Path, fn apivalidation.ValidateNameFunc) field.ErrorList {
	if name == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range fn(name, false) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	return errs
}

func joinErrs(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}
