package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// validate --apiserver: beside its own findings, validate prints the
// verdict of a real kube-apiserver (the helper of --apiserver) on every
// object of the input, submitted as written with a server-side dry run
// (ControlPlane.DryRun says what is created for real, and why). Where the two
// disagree, the API server is right about what it stores; validate also
// checks what the API server does not (the kubelet's own rules, the
// references between objects), README "validate --apiserver".

// apiServerMinor is the minor release of the helper's kube-apiserver
// (cluster.KubeVersion, v1.37.2).
const apiServerMinor = 37

// apiServerPrefix starts every message of the API server's verdict.
const apiServerPrefix = "API server: "

// rawDoc is an object as written, where the loader read it.
type rawDoc struct {
	src  manifests.Source
	data []byte
}

// rawDocs collects the loader's object documents.
type rawDocs struct{ docs []rawDoc }

func (r *rawDocs) add(src manifests.Source, data []byte) {
	r.docs = append(r.docs, rawDoc{src: src, data: append([]byte(nil), data...)})
}

// checkAPIServerFlags: the helper's API server is of one release, whose
// feature gates are its defaults.
func (o *ValidateOptions) checkAPIServerFlags(v node.Version) error {
	if !o.APIServer {
		return nil
	}
	if v.Minor != apiServerMinor {
		return session.WithCode(session.ExitUsage, fmt.Errorf("--apiserver: the API server is of release 1.%d, --kubelet-version %s cannot be judged by it", apiServerMinor, v))
	}
	if o.FeatureGates != "" {
		return session.WithCode(session.ExitUsage, errors.New("--apiserver: the API server runs with its release's default feature gates; drop --feature-gates"))
	}
	return nil
}

// apiServerFindings starts a control plane in a temporary directory,
// judges every object and stops it (nothing is left).
func (o *ValidateOptions) apiServerFindings(ctx context.Context, p *preflight, raws *rawDocs) ([]located, error) {
	if len(raws.docs) == 0 {
		return nil, nil
	}
	root, err := os.MkdirTemp("", "csi-kubelet-sim-validate-")
	if err != nil {
		return nil, session.WithCode(session.ExitEnvironment, fmt.Errorf("--apiserver: temporary directory: %w", err))
	}
	defer os.RemoveAll(root)
	cp, err := cluster.Start(ctx, cluster.Config{Root: root, NodeName: "csi-kubelet-sim-validate"})
	if err != nil {
		return nil, apiServerError(ctx, "start", err)
	}
	defer cp.Stop()
	objs := make([]cluster.RawObject, len(raws.docs))
	for i, d := range raws.docs {
		objs[i] = cluster.RawObject{JSON: d.data}
	}
	verdicts, err := cp.DryRun(ctx, objs)
	if err != nil {
		return nil, apiServerError(ctx, "ask", err)
	}
	var out []located
	for i, d := range raws.docs {
		out = append(out, p.verdictFindings(d, verdicts[i])...)
	}
	return out, nil
}

func apiServerError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return session.WithCode(session.ExitInterrupted, errors.New("interrupted while the API server judged the objects (--apiserver); it was stopped and removed"))
	}
	var nf *cluster.NotFoundError
	if errors.As(err, &nf) {
		return session.WithCode(session.ExitEnvironment, err)
	}
	if what == "start" {
		return session.WithCode(session.ExitEnvironment, fmt.Errorf("--apiserver: %w", err))
	}
	return session.WithCode(session.ExitEnvironment, fmt.Errorf("--apiserver: the API server failed: %w", err))
}

// verdictFindings are the API server's findings on one object: its
// warnings, then "accepted" or each reason of its refusal, at the line of
// the field it names.
func (p *preflight) verdictFindings(d rawDoc, v cluster.Verdict) []located {
	obj := v.Object
	if obj == "" {
		obj = rawObjectName(d.data)
	}
	at := func(sev, path, msg string) located {
		return p.at(d.src, obj, sev, path, apiServerPrefix+msg)
	}
	var out []located
	for _, w := range v.Warnings {
		out = append(out, at("warning", "", w))
	}
	switch {
	case v.Accepted && v.Real:
		out = append(out, at("info", "", "accepted (created: the other objects need it)"))
	case v.Accepted:
		out = append(out, at("info", "", "accepted (server-side dry run)"))
	case len(v.Causes) > 0:
		for _, c := range v.Causes {
			out = append(out, at("error", fieldPath(c), c))
		}
	default:
		path := ""
		if m := unknownFieldRe.FindStringSubmatch(v.Message); m != nil {
			path = m[1]
		}
		out = append(out, at("error", path, fmt.Sprintf("refused (%s): %s", v.Reason, oneLineMessage(v.Message))))
	}
	return out
}

// rawObjectName names an object as the tool's findings do: "Kind
// namespace/name" (namespace "default" when unset) for the kinds the
// simulator reads and every other namespaced-looking one, "Kind name" for
// cluster-scoped kinds.
func rawObjectName(data []byte) string {
	var o struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(data, &o)
	if clusterScoped[o.Kind] {
		return o.Kind + " " + o.Metadata.Name
	}
	ns := o.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	return o.Kind + " " + ns + "/" + o.Metadata.Name
}

// clusterScoped are the cluster-scoped kinds an input commonly holds.
var clusterScoped = map[string]bool{
	"CSIDriver": true, "CSINode": true, "StorageClass": true, "VolumeAttachment": true, "PersistentVolume": true,
	"Node": true, "Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true, "PriorityClass": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// unknownFieldRe finds the field of a strict decoding error, for its line.
var unknownFieldRe = regexp.MustCompile(`unknown field "([^"]+)"`)

// oneLineMessage keeps a status message on one line of the output.
func oneLineMessage(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// load reads the manifests, or with --pod the pod of a cluster and what
// its volumes name (stored as read: validate judges them).
func (o *ValidateOptions) load(ctx context.Context, loader *manifests.Loader, defaults manifests.Defaults, warn func(string)) (*manifests.Cluster, error) {
	if o.Live.Pod == "" {
		return loader.Load(o.Filenames)
	}
	c, _, err := o.Live.Read(ctx, defaults, "", false, warn)
	return c, err
}
