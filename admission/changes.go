package admission

import (
	"fmt"
	"reflect"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// zero empties an object in place, so that a JSON decode into it starts
// from nothing.
func zero(obj runtime.Object) {
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
}

// describeChanges lists, for a person, what changed from a to b: labels,
// annotations, and for pods the fields mutating webhooks commonly set.
func describeChanges(a, b runtime.Object) []string {
	ma, err1 := metaOf(a)
	mb, err2 := metaOf(b)
	if err1 != nil || err2 != nil {
		return nil
	}
	var out []string
	out = append(out, mapChanges("label", ma.GetLabels(), mb.GetLabels())...)
	out = append(out, mapChanges("annotation", ma.GetAnnotations(), mb.GetAnnotations())...)
	pa, ok1 := a.(*corev1.Pod)
	pb, ok2 := b.(*corev1.Pod)
	if ok1 && ok2 {
		out = append(out, podChanges(pa, pb)...)
	} else if !reflect.DeepEqual(a, b) && len(out) == 0 {
		out = append(out, "changed fields (see the patch)")
	}
	return out
}

func mapChanges(what string, a, b map[string]string) []string {
	var out []string
	keys := make([]string, 0, len(a)+len(b))
	for k := range b {
		keys = append(keys, k)
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		va, ina := a[k]
		vb, inb := b[k]
		switch {
		case !ina:
			out = append(out, fmt.Sprintf("added %s %s=%s", what, k, vb))
		case !inb:
			out = append(out, fmt.Sprintf("removed %s %s", what, k))
		case va != vb:
			out = append(out, fmt.Sprintf("changed %s %s: %s -> %s", what, k, va, vb))
		}
	}
	return out
}

func podChanges(a, b *corev1.Pod) []string {
	var out []string
	if a.Spec.ServiceAccountName != b.Spec.ServiceAccountName {
		out = append(out, fmt.Sprintf("serviceAccountName: %q -> %q", a.Spec.ServiceAccountName, b.Spec.ServiceAccountName))
	}
	out = append(out, volumeChanges(a.Spec.Volumes, b.Spec.Volumes)...)
	if !reflect.DeepEqual(a.Spec.SecurityContext, b.Spec.SecurityContext) {
		out = append(out, "changed the pod's securityContext")
	}
	out = append(out, containerChanges("container", a.Spec.Containers, b.Spec.Containers)...)
	out = append(out, containerChanges("init container", a.Spec.InitContainers, b.Spec.InitContainers)...)
	if !reflect.DeepEqual(a.Spec.NodeSelector, b.Spec.NodeSelector) || a.Spec.NodeName != b.Spec.NodeName {
		out = append(out, "changed where the pod runs (nodeName or nodeSelector)")
	}
	return out
}

func volumeChanges(a, b []corev1.Volume) []string {
	old := map[string]corev1.Volume{}
	for _, v := range a {
		old[v.Name] = v
	}
	var out []string
	seen := map[string]bool{}
	for _, v := range b {
		seen[v.Name] = true
		o, had := old[v.Name]
		switch {
		case !had:
			out = append(out, "added volume "+volumeSummary(v))
		case !reflect.DeepEqual(o, v):
			out = append(out, "changed volume "+volumeSummary(v))
		}
	}
	for _, v := range a {
		if !seen[v.Name] {
			out = append(out, "removed volume "+v.Name)
		}
	}
	return out
}

func volumeSummary(v corev1.Volume) string {
	switch {
	case v.CSI != nil:
		return fmt.Sprintf("%s (CSI inline, driver %s, volumeAttributes %v)", v.Name, v.CSI.Driver, v.CSI.VolumeAttributes)
	case v.PersistentVolumeClaim != nil:
		return fmt.Sprintf("%s (claim %s)", v.Name, v.PersistentVolumeClaim.ClaimName)
	case v.Secret != nil:
		return fmt.Sprintf("%s (secret %s)", v.Name, v.Secret.SecretName)
	case v.Projected != nil:
		return v.Name + " (projected)"
	case v.EmptyDir != nil:
		return v.Name + " (emptyDir)"
	case v.Ephemeral != nil:
		return v.Name + " (generic ephemeral)"
	}
	return v.Name
}

func containerChanges(what string, a, b []corev1.Container) []string {
	old := map[string]corev1.Container{}
	for _, c := range a {
		old[c.Name] = c
	}
	var out []string
	for _, c := range b {
		o, had := old[c.Name]
		if !had {
			out = append(out, fmt.Sprintf("added %s %s (image %s)", what, c.Name, c.Image))
			continue
		}
		mounts := map[string]bool{}
		for _, m := range o.VolumeMounts {
			mounts[m.Name+"\x00"+m.MountPath] = true
		}
		for _, m := range c.VolumeMounts {
			if !mounts[m.Name+"\x00"+m.MountPath] {
				out = append(out, fmt.Sprintf("%s %s: mounts volume %s at %s", what, c.Name, m.Name, m.MountPath))
			}
		}
		if !reflect.DeepEqual(o.SecurityContext, c.SecurityContext) {
			out = append(out, fmt.Sprintf("%s %s: changed securityContext", what, c.Name))
		}
		if !reflect.DeepEqual(o.Env, c.Env) {
			out = append(out, fmt.Sprintf("%s %s: changed env", what, c.Name))
		}
	}
	return out
}
