package manifests

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StorageClass returns the StorageClass with that name, if any.
func (c *Cluster) StorageClass(name string) (*storagev1.StorageClass, bool) {
	sc, ok := c.classes[name]
	return sc, ok
}

// defaultStorageClass is SetDefaults_StorageClass
// (pkg/apis/storage/v1/defaults.go): reclaimPolicy Delete and
// volumeBindingMode Immediate when unset. A class is cluster-scoped.
func defaultStorageClass(sc *storagev1.StorageClass) {
	sc.Namespace = ""
	if sc.ReclaimPolicy == nil {
		p := corev1.PersistentVolumeReclaimDelete
		sc.ReclaimPolicy = &p
	}
	if sc.VolumeBindingMode == nil {
		m := storagev1.VolumeBindingImmediate
		sc.VolumeBindingMode = &m
	}
}

// Limits of ValidateStorageClass's validateParameters.
const (
	maxClassParameters     = 512
	maxClassParametersSize = 256 * (1 << 10)
)

// validateStorageClass is the API server's ValidateStorageClass after
// defaulting (pkg/apis/storage/validation): the object meta of a
// cluster-scoped object, the provisioner a qualified name, the parameters
// bounded, then the reclaim policy, binding mode and allowed topologies.
func validateStorageClass(sc *storagev1.StorageClass) []string {
	errs := apivalidation.ValidateObjectMeta(&sc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	p := field.NewPath("provisioner")
	if sc.Provisioner == "" {
		errs = append(errs, field.Required(p, ""))
	}
	for _, msg := range validation.IsQualifiedName(strings.ToLower(sc.Provisioner)) {
		if sc.Provisioner != "" {
			errs = append(errs, field.Invalid(p, sc.Provisioner, msg))
		}
	}
	errs = append(errs, classParameterErrs(sc.Parameters, field.NewPath("parameters"))...)
	if r := sc.ReclaimPolicy; r != nil && *r != corev1.PersistentVolumeReclaimDelete && *r != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *r, []string{"Delete", "Retain"}))
	}
	if m := sc.VolumeBindingMode; m != nil && *m != storagev1.VolumeBindingImmediate && *m != storagev1.VolumeBindingWaitForFirstConsumer {
		errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), *m, []string{"Immediate", "WaitForFirstConsumer"}))
	}
	errs = append(errs, allowedTopologyErrs(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
	errs = append(errs, mountOptionErrs(sc.MountOptions, field.NewPath("mountOptions"))...)
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return msgs
}

func classParameterErrs(params map[string]string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(params) > maxClassParameters {
		return append(errs, field.TooLong(fld, "Provisioner Parameters exceeded max allowed", maxClassParameters))
	}
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(fld, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxClassParametersSize {
		errs = append(errs, field.TooLong(fld, "", maxClassParametersSize))
	}
	return errs
}

// allowedTopologyErrs is ValidateAllowedTopologies: every term has at
// least one expression, keys are qualified names used once per term, and
// every expression has values.
func allowedTopologyErrs(terms []corev1.TopologySelectorTerm, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range terms {
		tp := fld.Index(i)
		if len(t.MatchLabelExpressions) == 0 {
			errs = append(errs, field.Required(tp, "must have at least one label selector"))
			continue
		}
		seen := map[string]bool{}
		for j, e := range t.MatchLabelExpressions {
			ep := tp.Child("matchLabelExpressions").Index(j)
			for _, msg := range validation.IsQualifiedName(e.Key) {
				errs = append(errs, field.Invalid(ep.Child("key"), e.Key, msg))
			}
			if seen[e.Key] {
				errs = append(errs, field.Duplicate(ep.Child("key"), e.Key))
			}
			seen[e.Key] = true
			if len(e.Values) == 0 {
				errs = append(errs, field.Required(ep.Child("values"), "must specify as least one value"))
			}
		}
	}
	return errs
}

// StorageClasses returns the StorageClasses, by name.
func (c *Cluster) StorageClasses() []*storagev1.StorageClass {
	out := make([]*storagev1.StorageClass, 0, len(c.classes))
	for _, sc := range c.classes {
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
