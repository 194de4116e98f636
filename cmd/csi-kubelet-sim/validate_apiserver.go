package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// apiserverVerdicts asks a real kube-apiserver (the --apiserver helper)
// for its verdict on every CSIDriver of the input, with a dry-run create,
// and sets it beside the tool's own: a finding of severity "apiserver"
// per object, and one of severity "disagreement" where the two differ
// (one accepts what the other refuses, or their messages differ). The
// comparison holds for the helper's release only.
func apiserverVerdicts(ctx context.Context, c *manifests.Cluster, defaults manifests.Defaults, v node.Version) ([]finding, error) {
	root, err := os.MkdirTemp("", "csi-kubelet-sim-validate-")
	if err != nil {
		return nil, withCode(exitEnvironment, err)
	}
	defer os.RemoveAll(root)
	cp, err := cluster.Start(ctx, cluster.Config{Root: root, NodeName: "validate"})
	if err != nil {
		return nil, apiserverError(err)
	}
	defer cp.Stop()
	compare := "v"+v.String() == strings.Join(strings.Split(cluster.KubeVersion, ".")[:2], ".")
	var out []finding
	for _, d := range c.CSIDrivers() {
		doc, err := document(c, d)
		if err != nil {
			return nil, withCode(exitEnvironment, err)
		}
		verdict, err := cp.DryRun(ctx, doc)
		if err != nil {
			return nil, apiserverError(err)
		}
		src, obj := doc.Source, "CSIDriver "+d.Name
		out = append(out, finding{src, obj, "apiserver", verdictText(verdict)})
		if !compare {
			continue
		}
		if why := disagreement(verdict, manifests.CSIDriverErrors(d, defaults)); why != "" {
			out = append(out, finding{src, obj, "disagreement", why})
		}
		if mine := manifests.CSIDriverWarnings(d, defaults); verdict.Accepted && !sameSet(mine, verdict.Warnings) {
			out = append(out, finding{src, obj, "disagreement", fmt.Sprintf("other warnings: the API server [%s], csi-kubelet-sim [%s]",
				strings.Join(verdict.Warnings, "; "), strings.Join(mine, "; "))})
		}
	}
	if !compare {
		out = append(out, finding{"kube-apiserver " + cluster.KubeVersion, "--kubelet-version " + v.String(), "info",
			"the API server's verdicts are those of " + cluster.KubeVersion + ": not compared with this release's"})
	}
	return out, nil
}

func verdictText(v cluster.Verdict) string {
	s := "kube-apiserver " + cluster.KubeVersion + " accepts it"
	if !v.Accepted {
		s = "kube-apiserver " + cluster.KubeVersion + " refuses it: " + v.Message
	}
	for _, w := range v.Warnings {
		s += "; warning: " + w
	}
	return s
}

// disagreement says how the two verdicts differ; "" when they agree.
func disagreement(v cluster.Verdict, tool []string) string {
	switch {
	case v.Accepted && len(tool) > 0:
		return fmt.Sprintf("the API server accepts it, csi-kubelet-sim refuses it (%s)", strings.Join(tool, "; "))
	case !v.Accepted && len(tool) == 0:
		return "csi-kubelet-sim accepts it, the API server refuses it: " + v.Message
	case v.Accepted:
		return ""
	}
	mine := slices.Clone(tool)
	sort.Strings(mine)
	if !slices.Equal(mine, v.Causes) {
		return fmt.Sprintf("both refuse it, with other messages: the API server [%s], csi-kubelet-sim [%s]", strings.Join(v.Causes, "; "), strings.Join(mine, "; "))
	}
	return ""
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	sort.Strings(x)
	sort.Strings(y)
	return slices.Equal(x, y)
}
