package validate

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// requiredFindings are the API server's refusals of pods, PVs and claims
// for fields the simulation does not need (manifests.APIServerErrors):
// validate judges as the API server would, `run` takes them as given.
func requiredFindings(c *manifests.Cluster) []finding {
	var out []finding
	for _, o := range c.Objects() {
		errs := manifests.APIServerErrors(o)
		m, ok := o.(metav1.Object)
		if len(errs) == 0 || !ok {
			continue
		}
		name := manifests.ObjectName(o)
		kind, _, _ := strings.Cut(name, " ")
		src := c.SourceOf(kind, m.GetNamespace(), m.GetName()).String()
		for _, e := range errs {
			out = append(out, finding{src, name, "error", e})
		}
	}
	return out
}
