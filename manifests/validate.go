package manifests

import (
	"errors"
	"fmt"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Validate judges an object as the API server does on create, as far as
// the simulator checks it (MutatingWebhookConfiguration objects are judged
// by the admission package).
func Validate(obj any, opts Defaults) error { return validate(obj, opts) }

// validate refuses what the API server would refuse outright and the
// kubelet could not work with, naming the field by its path: required
// fields first, then every name that reaches a path or a lookup
// (ObjectNameErrors), all of them. Full CSIDriver validation is the
// `validate` command's job.
func validate(obj any, opts Defaults) error {
	if errs := validationErrors(obj, opts); len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// validationErrors lists every error validate refuses an object for, each
// starting with its field path.
func validationErrors(obj any, opts Defaults) []string {
	var out []string
	seen := map[string]bool{}
	// A missing driver is both a required field and an invalid name.
	for _, e := range append(requiredFields(obj, opts), ObjectNameErrors(obj)...) {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

func requiredFields(obj any, opts Defaults) []string {
	switch o := obj.(type) {
	case *corev1.Namespace:
		return requireName(o.Name)
	case *storagev1.StorageClass:
		return validateStorageClass(o)
	case *storagev1.CSIDriver:
		return CSIDriverErrors(o, opts)
	case *storagev1.VolumeAttachment:
		return requireName(o.Name)
	case *corev1.Node:
		return requireName(o.Name)
	case *corev1.Secret:
		return requireName(o.Name)
	case *corev1.ServiceAccount:
		return requireName(o.Name)
	case *corev1.PersistentVolumeClaim:
		return requireName(o.Name)
	case *corev1.PersistentVolume:
		errs := requireName(o.Name)
		if c := o.Spec.CSI; c != nil {
			if c.Driver == "" {
				errs = append(errs, "spec.csi.driver: Required value")
			}
			if c.VolumeHandle == "" {
				errs = append(errs, "spec.csi.volumeHandle: Required value")
			}
		}
		return errs
	case *corev1.Pod:
		return append(requireName(o.Name), podVolumeErrors(o)...)
	}
	return nil
}

func requireName(name string) []string {
	if name == "" {
		return []string{"metadata.name: Required value"}
	}
	return nil
}

func podVolumeErrors(p *corev1.Pod) []string {
	var errs []string
	seen := map[string]bool{}
	for i, v := range p.Spec.Volumes {
		path := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case v.Name == "":
			errs = append(errs, path+".name: Required value")
		case seen[v.Name]:
			errs = append(errs, fmt.Sprintf("%s.name: Duplicate value: %q", path, v.Name))
		}
		seen[v.Name] = true
		if v.CSI != nil && v.CSI.Driver == "" {
			errs = append(errs, path+".csi.driver: Required value")
		}
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, path+".persistentVolumeClaim.claimName: Required value")
		}
	}
	return errs
}

// ValidateCSIDriver is the API server's validation of a CSIDriver after
// defaulting (pkg/apis/storage/validation, docs/kubelet.md §14.3), with its field
// paths and messages; the first error is returned.
func ValidateCSIDriver(d *storagev1.CSIDriver, opts Defaults) error {
	errs := CSIDriverErrors(d, opts)
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// CSIDriverErrors lists every validation error of a CSIDriver (opts say
// which gated fields the release requires), worded by
// apimachinery's field errors as the API server words them.
func CSIDriverErrors(d *storagev1.CSIDriver, opts Defaults) []string {
	// ValidateCSIDriver: the object meta as for every cluster-scoped
	// object (name a DNS subdomain, labels, annotations, no namespace),
	// then the spec.
	errs := apivalidation.ValidateObjectMeta(&d.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	// The order of validateCSIDriverSpec, so that the first error is the
	// API server's first error.
	spec := field.NewPath("spec")
	s := d.Spec
	if s.AttachRequired == nil {
		// The API server's own path: misspelt upstream up to 1.37.
		name := "attachedRequired"
		if opts.AttachRequiredPath {
			name = "attachRequired"
		}
		errs = append(errs, field.Required(spec.Child(name), ""))
	}
	if s.PodInfoOnMount == nil {
		errs = append(errs, field.Required(spec.Child("podInfoOnMount"), ""))
	}
	if s.StorageCapacity == nil {
		errs = append(errs, field.Required(spec.Child("storageCapacity"), ""))
	}
	if p := s.FSGroupPolicy; p != nil {
		switch *p {
		case storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy:
		default:
			errs = append(errs, field.NotSupported(spec.Child("fsGroupPolicy"), *p, []string{"File", "None", "ReadWriteOnceWithFSType"}))
		}
	}
	errs = append(errs, tokenRequestErrors(s.TokenRequests, spec.Child("tokenRequests"))...)
	for _, m := range s.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			// Upstream names the list, not the entry.
			errs = append(errs, field.NotSupported(spec.Child("volumeLifecycleModes"), m, []string{"Persistent", "Ephemeral"}))
		}
	}
	if s.SELinuxMount == nil && !opts.Dropped.SELinuxMount {
		errs = append(errs, field.Required(spec.Child("seLinuxMount"), ""))
	}
	if p := s.NodeAllocatableUpdatePeriodSeconds; p != nil && *p < 10 {
		errs = append(errs, field.Invalid(spec.Child("nodeAllocatableUpdatePeriodSeconds"), *p, "must be greater than or equal to 10 seconds"))
	}
	if s.ServiceAccountTokenInSecrets != nil && len(s.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(spec.Child("serviceAccountTokenInSecrets"), *s.ServiceAccountTokenInSecrets, "serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	if opts.PreventPodSchedulingIfMissing && s.PreventPodSchedulingIfMissing == nil {
		errs = append(errs, field.Required(spec.Child("preventPodSchedulingIfMissing"), ""))
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// tokenRequestErrors is validateTokenRequests: a duplicate audience is
// reported alone, its expiration left unchecked.
func tokenRequestErrors(trs []storagev1.TokenRequest, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, tr := range trs {
		p := path.Index(i)
		if seen[tr.Audience] {
			errs = append(errs, field.Duplicate(p.Child("audience"), tr.Audience))
			continue
		}
		seen[tr.Audience] = true
		if e := tr.ExpirationSeconds; e != nil {
			if *e < 600 {
				errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
			}
			if *e > 1<<32 {
				errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
			}
		}
	}
	return errs
}

// CSIDriverWarnings are the API server's warnings on creating a CSIDriver
// (pkg/registry/storage/csidriver/strategy.go WarningsOnCreate). The one
// warning exists only where the release has serviceAccountTokenInSecrets
// (the CSIServiceAccountTokenSecrets gate, which opts.Dropped mirrors).
func CSIDriverWarnings(d *storagev1.CSIDriver, opts Defaults) []string {
	if opts.Dropped.ServiceAccountTokenInSecrets {
		return nil
	}
	if len(d.Spec.TokenRequests) > 0 && d.Spec.ServiceAccountTokenInSecrets == nil {
		return []string{"spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"}
	}
	return nil
}

// DriverNameErrors is ValidateCSIDriverName (pkg/apis/core/validation), the
// check of the driver name in a PV or an inline volume: at most 63
// characters, a DNS-1123 subdomain after lower-casing, so a name in upper
// case passes here yet matches no CSIDriver object.
func DriverNameErrors(name string, path *field.Path) []string {
	errs := driverNameErrs(name, path)
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}
