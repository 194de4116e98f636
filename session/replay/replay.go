// Package replay answers `--kubeconfig FILE --pod NAMESPACE/NAME`: the
// input read from a running cluster instead of files, the pod and what its
// volumes make a kubelet read (livecluster.Read, gets only), replayed
// against the local driver as if they had been the manifests (same
// objects, UIDs kept). "Why did this pod's mount fail?" answered on a
// laptop.
package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/livecluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
)

// Options are the flags of a replay.
type Options struct {
	Kubeconfig string
	Pod        string
	// ProvisionUnbound: a claim the cluster has not bound yet is
	// provisioned by the replay, under a name of its own; without it such
	// a claim is refused.
	ProvisionUnbound bool
	// nodeGiven: --node-name was given; else the pod's node is the
	// simulated kubelet's (its VolumeAttachments are named after it).
	nodeGiven bool
	host      string // the cluster's API server, once read
}

// Check refuses what cannot be combined.
func (l *Options) Check(files []string) error {
	switch {
	case l.Pod == "" && l.Kubeconfig != "":
		return exitcode.With(exitcode.Usage, errors.New("--kubeconfig needs --pod NAMESPACE/NAME"))
	case l.Pod != "" && (strings.Count(l.Pod, "/") > 1 || strings.HasPrefix(l.Pod, "/") || strings.HasSuffix(l.Pod, "/")):
		return exitcode.With(exitcode.Usage, fmt.Errorf("--pod %q: want NAMESPACE/NAME (or NAME, in the kubeconfig context's namespace)", l.Pod))
	case l.Pod == "" && l.ProvisionUnbound:
		return exitcode.With(exitcode.Usage, errors.New("--provision-unbound needs --pod NAMESPACE/NAME"))
	case l.Pod != "" && len(files) > 0:
		return exitcode.With(exitcode.Usage, fmt.Errorf("--pod reads the input from the cluster: drop -f and the file arguments (%s)", strings.Join(files, ", ")))
	}
	return nil
}

// config loads the kubeconfig as kubectl does (livecluster.LoadKubeconfig).
func (l *Options) config(ctx context.Context) (*livecluster.Config, error) {
	path := l.Kubeconfig
	if path == "" {
		path = livecluster.DefaultKubeconfig()
	}
	cfg, err := livecluster.LoadKubeconfig(ctx, path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, exitcode.With(exitcode.Interrupted, errors.New("interrupted while reading the kubeconfig; nothing was run"))
		}
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("--kubeconfig: %w", err))
	}
	return cfg, nil
}

// NodeGiven records whether --node-name was given: else the simulated
// node is the pod's.
func (l *Options) NodeGiven(given bool) { l.nodeGiven = given }

// Load reads the pod and builds the cluster the run sees, and the
// simulated node's name: the pod's unless --node-name was given
// (nodeName, else the default it returns).
func (l *Options) Load(ctx context.Context, defaults manifests.Defaults, nodeName string, warn func(string)) (*manifests.Cluster, string, error) {
	asked := ""
	if l.nodeGiven {
		asked = nodeName
	}
	c, pod, err := l.Read(ctx, defaults, asked, true, warn)
	if err != nil {
		return nil, "", err
	}
	if !l.nodeGiven && pod.Spec.NodeName != "" {
		nodeName = pod.Spec.NodeName
	}
	if !l.ProvisionUnbound {
		if err := refuseUnbound(c, pod, l.host); err != nil {
			return nil, "", err
		}
	}
	return c, nodeName, nil
}

// refuseUnbound refuses a pod with a claim the cluster has not bound and
// that the provisioner would provision: the replay would call CreateVolume
// with the cluster provisioner's own name (pvc-<claim uid>), which a driver
// answers with the cluster's volume if it exists (CSI makes CreateVolume
// idempotent by name), and delete it at the end.
func refuseUnbound(c *manifests.Cluster, pod *corev1.Pod, host string) error {
	for _, v := range pod.Spec.Volumes {
		name := livecluster.ClaimName(pod, v)
		claim, ok := c.PersistentVolumeClaim(pod.Namespace, name)
		if name == "" || !ok || claim.Spec.VolumeName != "" || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName == "" {
			continue
		}
		phase := claim.Status.Phase
		if phase == "" {
			phase = corev1.ClaimPending
		}
		return exitcode.With(exitcode.Usage, fmt.Errorf("--pod: claim %s/%s is not bound in the cluster at %s (%s, StorageClass %s): a replay does not provision it under the cluster provisioner's name pvc-%s (that volume is the cluster's, and would be deleted at the end); wait until it is bound, or --provision-unbound provisions a volume of the replay's own, deleted at the end",
			claim.Namespace, claim.Name, host, phase, *claim.Spec.StorageClassName, claim.UID))
	}
	return nil
}

// Read reads the pod and builds a cluster of what was read: each object
// defaulted and, with check, judged as a manifest would be (validate
// judges them itself); what is missing is warned about (the kubelet then
// fails where a real one fails).
func (l *Options) Read(ctx context.Context, defaults manifests.Defaults, nodeName string, check bool, warn func(string)) (*manifests.Cluster, *corev1.Pod, error) {
	cfg, err := l.config(ctx)
	if err != nil {
		return nil, nil, err
	}
	ns, name, ok := strings.Cut(l.Pod, "/")
	if !ok {
		ns, name = cfg.Namespace, l.Pod
		if ns == "" {
			ns = "default"
		}
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, nil, exitcode.With(exitcode.Usage, fmt.Errorf("--pod %q: want NAMESPACE/NAME", l.Pod))
	}
	l.host = cfg.Host
	got, err := livecluster.Read(ctx, cfg, ns, name, nodeName)
	if err != nil {
		return nil, nil, liveError(ctx, err)
	}
	c := manifests.New()
	for _, obj := range got.Objects {
		src := manifests.Source{File: "cluster " + cfg.Host}
		if err := defaults.Apply(obj); err != nil {
			return nil, nil, exitcode.With(exitcode.Usage, fmt.Errorf("%s: %w", src, err))
		}
		if check {
			if err := manifests.Validate(obj, defaults); err != nil {
				return nil, nil, exitcode.With(exitcode.Usage, fmt.Errorf("%s: %w", src, err))
			}
		}
		if err := c.Add(obj, src); err != nil {
			return nil, nil, exitcode.With(exitcode.Usage, err)
		}
	}
	for _, m := range got.Missing {
		warn(fmt.Sprintf("%s (named by %s) is not in the cluster at %s: %s; the kubelet goes on without it, as a real one would", m.Object, m.By, cfg.Host, m.Reason))
	}
	return c, got.Pod, nil
}

// liveError: the pod not readable is bad input (2), the cluster not
// answering the environment (3).
func liveError(ctx context.Context, err error) error {
	var nr *livecluster.NotReadError
	var un *livecluster.UnreachableError
	switch {
	case ctx.Err() != nil:
		return exitcode.With(exitcode.Interrupted, errors.New("interrupted while reading the pod from the cluster; nothing was run"))
	case errors.As(err, &nr):
		return exitcode.With(exitcode.Usage, fmt.Errorf("--pod: %w", err))
	case errors.As(err, &un):
		return exitcode.With(exitcode.Environment, fmt.Errorf("--pod: %w", err))
	}
	return exitcode.With(exitcode.Environment, fmt.Errorf("--pod: %w", err))
}
