package validate

import (
	"fmt"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// classFindings judge the StorageClasses and the claims the provisioner
// would provision from them (docs/kubelet.md §22): the class's fields are
// the loader's to check; here, whether its provisioner has a CSIDriver,
// and what each class and claim comes to after defaulting.
func classFindings(c *manifests.Cluster) []finding {
	var out []finding
	for _, sc := range c.StorageClasses() {
		src := c.SourceOf("StorageClass", "", sc.Name).String()
		obj := "StorageClass " + sc.Name
		if _, ok := c.CSIDriver(sc.Provisioner); !ok {
			out = append(out, finding{src, obj, "warning", fmt.Sprintf("no CSIDriver named %q%s: the kubelet treats the provisioned volumes' driver as having none (attach required, no pod info, persistent volumes only)", sc.Provisioner, manifests.DidYouMean(sc.Provisioner, c.CSIDriverNames()))})
		}
		out = append(out, finding{src, obj, "info", fmt.Sprintf("valid; after defaulting: provisioner=%s reclaimPolicy=%s volumeBindingMode=%s parameters=%d", sc.Provisioner, *sc.ReclaimPolicy, *sc.VolumeBindingMode, len(sc.Parameters))})
	}
	seen := map[string]bool{}
	for _, pod := range c.Pods() {
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			claim, ok := c.PersistentVolumeClaim(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if !ok || claim.Spec.VolumeName != "" || claim.Spec.StorageClassName == nil || seen[claim.Namespace+"/"+claim.Name] {
				continue
			}
			sc, ok := c.StorageClass(*claim.Spec.StorageClassName)
			if !ok {
				continue // the reference check says so
			}
			seen[claim.Namespace+"/"+claim.Name] = true
			src := c.SourceOf("PersistentVolumeClaim", claim.Namespace, claim.Name).String()
			out = append(out, finding{src, "PersistentVolumeClaim " + claim.Namespace + "/" + claim.Name, "info",
				fmt.Sprintf("valid; no PV: provisioned by %s from StorageClass %s (CreateVolume pvc-<claim uid>) for pod %s/%s", sc.Provisioner, sc.Name, pod.Namespace, pod.Name)})
		}
	}
	return out
}
