package manifests

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Reference is a name one object gives that the input does not hold (or
// holds in a shape the kubelet cannot use): the pre-flight's reference
// check, which finds what a run would stop at, all at once.
type Reference struct {
	Source Source // the object that names it
	Object string // "Pod default/web"
	Path   string // the field that names it
	// Severity is "error" (the kubelet or the API server stops there) or
	// "warning".
	Severity string
	Message  string
	// Target is the object named ("Secret ns/s"); Admission: only the API
	// server's admission judges it (the ServiceAccount), not the kubelet.
	Target    string
	Admission bool
}

// storageClassGetter is what a cluster that loads StorageClass objects
// offers; the claims' classes are checked only then.
type storageClassGetter interface {
	StorageClass(name string) (*storagev1.StorageClass, bool)
}

// MissingReferences lists every reference of the input that leads nowhere:
// the Secrets PersistentVolumes and inline volumes name, the claims pods
// name, the PersistentVolumes claims are bound to, the ServiceAccounts
// pods run as, and the CSIDrivers of the pods' inline volumes.
func (c *Cluster) MissingReferences() []Reference {
	var out []Reference
	for _, pv := range c.PersistentVolumes() {
		out = append(out, c.pvReferences(pv)...)
	}
	for _, pvc := range c.sortedClaims() {
		out = append(out, c.claimReferences(pvc)...)
	}
	for _, p := range c.pods {
		out = append(out, c.podReferences(p)...)
	}
	return out
}

func (c *Cluster) sortedClaims() []*corev1.PersistentVolumeClaim {
	out := make([]*corev1.PersistentVolumeClaim, 0, len(c.pvcs))
	for _, pvc := range c.pvcs {
		out = append(out, pvc)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}

// pvReferences: the node-side Secrets of a CSI PV (the kubelet reads the
// stage, publish and expand ones; the controller ones are the sidecars').
func (c *Cluster) pvReferences(pv *corev1.PersistentVolume) []Reference {
	src := c.SourceOf("PersistentVolume", "", pv.Name)
	obj := "PersistentVolume " + pv.Name
	csi := pv.Spec.CSI
	if csi == nil {
		return nil
	}
	var out []Reference
	refs := []struct {
		field, call string
		ref         *corev1.SecretReference
	}{
		{"nodeStageSecretRef", "NodeStageVolume", csi.NodeStageSecretRef},
		{"nodePublishSecretRef", "NodePublishVolume", csi.NodePublishSecretRef},
		{"nodeExpandSecretRef", "NodeExpandVolume", csi.NodeExpandSecretRef},
	}
	for _, r := range refs {
		if r.ref == nil {
			continue
		}
		if _, ok := c.Secret(r.ref.Namespace, r.ref.Name); !ok {
			out = append(out, Reference{src, obj, "spec.csi." + r.field, "error",
				fmt.Sprintf("spec.csi.%s: Secret %s/%s not found: the kubelet fails %s without it (add the Secret to the input)", r.field, r.ref.Namespace, r.ref.Name, r.call),
				"Secret " + r.ref.Namespace + "/" + r.ref.Name, false})
		}
	}
	return out
}

// claimReferences: a claim the kubelet mounts must be bound to a PV that
// the input holds and that is bound back to it.
func (c *Cluster) claimReferences(pvc *corev1.PersistentVolumeClaim) []Reference {
	src := c.SourceOf("PersistentVolumeClaim", pvc.Namespace, pvc.Name)
	obj := "PersistentVolumeClaim " + pvc.Namespace + "/" + pvc.Name
	if pvc.Spec.VolumeName == "" {
		return c.unboundClaim(src, obj, pvc)
	}
	pv, ok := c.PersistentVolume(pvc.Spec.VolumeName)
	if !ok {
		return []Reference{{src, obj, "spec.volumeName", "error",
			fmt.Sprintf("spec.volumeName: PersistentVolume %q not found (add it to the input)", pvc.Spec.VolumeName),
			"PersistentVolume " + pvc.Spec.VolumeName, false}}
	}
	if ref := pv.Spec.ClaimRef; ref != nil && (ref.Name != pvc.Name || (ref.Namespace != "" && ref.Namespace != pvc.Namespace)) {
		return []Reference{{src, obj, "spec.volumeName", "error",
			fmt.Sprintf("spec.volumeName: PersistentVolume %s is bound to %s/%s (its spec.claimRef), not to this claim", pv.Name, ref.Namespace, ref.Name),
			"PersistentVolume " + pv.Name, false}}
	}
	return nil
}

// unboundClaim: a claim without spec.volumeName is mounted only once a
// PV is provisioned for it, which needs its StorageClass (checked when
// the input can hold StorageClass objects).
func (c *Cluster) unboundClaim(src Source, obj string, pvc *corev1.PersistentVolumeClaim) []Reference {
	class := pvc.Spec.StorageClassName
	if scs, ok := any(c).(storageClassGetter); ok && class != nil && *class != "" {
		if _, found := scs.StorageClass(*class); found {
			return nil
		}
		return []Reference{{src, obj, "spec.storageClassName", "error",
			fmt.Sprintf("spec.storageClassName: StorageClass %q not found, so no PersistentVolume can be provisioned for the claim (add it, or bind the claim with spec.volumeName)", *class),
			"StorageClass " + *class, false}}
	}
	return []Reference{{src, obj, "spec.volumeName", "error",
		"spec.volumeName: the claim names no PersistentVolume: the kubelet mounts bound claims only (set spec.volumeName to a PersistentVolume of the input)", "", false}}
}

// podReferences: the claims, inline Secrets, inline drivers' CSIDrivers
// and the ServiceAccount of a pod.
func (c *Cluster) podReferences(p *corev1.Pod) []Reference {
	src := c.SourceOf("Pod", p.Namespace, p.Name)
	obj := "Pod " + p.Namespace + "/" + p.Name
	var out []Reference
	add := func(target, path, format string, args ...any) {
		out = append(out, Reference{src, obj, path, "error", path + ": " + fmt.Sprintf(format, args...), target, false})
	}
	for i, v := range p.Spec.Volumes {
		path := fmt.Sprintf("spec.volumes[%d]", i)
		if claim := v.PersistentVolumeClaim; claim != nil && claim.ClaimName != "" {
			if _, ok := c.PersistentVolumeClaim(p.Namespace, claim.ClaimName); !ok {
				add("PersistentVolumeClaim "+p.Namespace+"/"+claim.ClaimName, path+".persistentVolumeClaim.claimName", "PersistentVolumeClaim %s/%s not found (add it to the input)", p.Namespace, claim.ClaimName)
			}
		}
		inline := v.CSI
		if inline == nil {
			continue
		}
		if ref := inline.NodePublishSecretRef; ref != nil && ref.Name != "" {
			if _, ok := c.Secret(p.Namespace, ref.Name); !ok {
				add("Secret "+p.Namespace+"/"+ref.Name, path+".csi.nodePublishSecretRef", "Secret %s/%s not found: the kubelet fails NodePublishVolume without it (inline volumes read it in the pod's namespace)", p.Namespace, ref.Name)
			}
		}
		if inline.Driver == "" {
			continue
		}
		if d, ok := c.CSIDriver(inline.Driver); !ok {
			add("CSIDriver "+inline.Driver, path+".csi.driver", "no CSIDriver named %q%s: the kubelet refuses inline volumes of a driver without one: volume mode \"Ephemeral\" not supported by driver %s (no CSIDriver object)", inline.Driver, DidYouMean(inline.Driver, c.CSIDriverNames()), inline.Driver)
		} else if !slices.Contains(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral) {
			add("CSIDriver "+d.Name, path+".csi.driver", "volume mode \"Ephemeral\" not supported by driver %s (only supports %q)", d.Name, d.Spec.VolumeLifecycleModes)
		}
	}
	// Every namespace has "default" (the ServiceAccount controller makes
	// it); another name must exist, or the API server's ServiceAccount
	// admission refuses the pod.
	if sa := p.Spec.ServiceAccountName; sa != "" && sa != "default" {
		if _, ok := c.ServiceAccount(p.Namespace, sa); !ok {
			add("ServiceAccount "+p.Namespace+"/"+sa, "spec.serviceAccountName", "ServiceAccount %s/%s not found: the API server refuses the pod (error looking up service account %s/%s: serviceaccount %q not found; add it to the input)", p.Namespace, sa, p.Namespace, sa, sa)
			out[len(out)-1].Admission = true
		}
	}
	return out
}
