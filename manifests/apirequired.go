package manifests

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// APIServerErrors are the API server's refusals of a Pod, PersistentVolume,
// PersistentVolumeClaim, Secret or VolumeAttachment for fields the kubelet simulation itself does
// not need (so `run` takes such objects as given), which `validate`
// reports because a cluster would not store them
// (pkg/apis/core/validation: ValidatePersistentVolumeSpec,
// ValidatePersistentVolumeClaimSpec, ValidatePodSpec, ValidateSecret;
// pkg/apis/storage/validation: ValidateVolumeAttachment), worded as the API
// server words them (docs/kubelet.md §14.4). Found by validate's
// differential check against the real API server.
func APIServerErrors(obj any) []string {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *corev1.PersistentVolume:
		errs = pvRequired(o)
	case *corev1.PersistentVolumeClaim:
		errs = claimRequired(o)
	case *corev1.Pod:
		errs = podRequired(o)
	case *corev1.Secret:
		errs = secretKeys(o)
	case *storagev1.VolumeAttachment:
		errs = attachmentRequired(o)
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// pvRequired: access modes and a capacity of storage alone.
func pvRequired(pv *corev1.PersistentVolume) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if len(pv.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(spec.Child("accessModes"), ""))
	}
	if len(pv.Spec.Capacity) == 0 {
		errs = append(errs, field.Required(spec.Child("capacity"), ""),
			// The API server says this too of an empty capacity.
			field.NotSupported(spec.Child("capacity"), nil, []string{string(corev1.ResourceStorage)}))
	}
	return errs
}

// claimRequired: at least one access mode and a storage request.
func claimRequired(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if len(pvc.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(spec.Child("accessModes"), "at least 1 access mode is required"))
	}
	if _, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(spec.Child("resources").Key(string(corev1.ResourceStorage)), ""))
	}
	return errs
}

// podRequired: at least one container, and every volume mount naming a
// volume of the pod.
func podRequired(p *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if len(p.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), ""))
	}
	volumes := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		volumes[v.Name] = true
	}
	for _, group := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", p.Spec.InitContainers}, {"containers", p.Spec.Containers}} {
		for i, c := range group.cs {
			for j, m := range c.VolumeMounts {
				if !volumes[m.Name] {
					errs = append(errs, field.NotFound(spec.Child(group.name).Index(i).Child("volumeMounts").Index(j).Child("name"), m.Name))
				}
			}
		}
	}
	return errs
}

// secretKeys: every key of data and stringData (merged into data by the
// API server) a valid config key.
func secretKeys(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	data := field.NewPath("data")
	keys := slices.Collect(maps.Keys(s.Data))
	for k := range s.StringData {
		if _, dup := s.Data[k]; !dup {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(data.Key(k), k, msg))
		}
	}
	return errs
}

// attachmentRequired: exactly one source (the attacher is checked with
// the names, ObjectNameErrors).
func attachmentRequired(va *storagev1.VolumeAttachment) field.ErrorList {
	const one = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
	src, path := va.Spec.Source, field.NewPath("spec", "source")
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		return field.ErrorList{field.Required(path, one)}
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		return field.ErrorList{field.Forbidden(path, one)}
	}
	return nil
}
