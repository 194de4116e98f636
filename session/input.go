package session

// The input of a session: the manifests (or a live cluster's pod), loaded,
// judged and admitted, with the options that shape them.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// completeInput checks the flags and loads the manifests, then runs the
// input's admission, which ctx (the command's: Ctrl-C) can interrupt.
func (o *CommonOptions) completeInput(ctx context.Context, s Streams, warn func(string)) error {
	if err := o.ValidateOutput(); err != nil {
		return err
	}
	// A system directory as the root dir is a usage error, refused before
	// the driver is looked at.
	if err := o.completeRootDir(); err != nil {
		return err
	}
	if err := o.CompleteRelease(); err != nil {
		return err
	}
	if err := o.validateTimeout(); err != nil {
		return err
	}
	if err := o.Live.Check(o.Filenames); err != nil {
		return err
	}
	if o.Live.Pod != "" && o.Apiserver.Enabled {
		return WithCode(ExitUsage, errors.New("--pod reads a live cluster, --apiserver makes one: not both"))
	}
	o.Live.NodeGiven(o.NodeName != "")
	var err error
	if o.NodeName == "" {
		if o.NodeName, err = os.Hostname(); err != nil {
			return WithCode(ExitEnvironment, fmt.Errorf("node name: %w", err))
		}
	}
	if err := manifests.ValidatePodUID(o.PodUID, field.NewPath("--pod-uid")); err != nil {
		return WithCode(ExitUsage, err)
	}
	if err := o.ServiceAccountOptions.Complete(); err != nil {
		return err
	}
	o.selinux = o.SELinux.Resolve(hostHasSELinux)
	loader := &manifests.Loader{
		Stdin:     s.In,
		Defaults:  o.Release.APIServerDefaults(),
		Warn:      warn,
		Recursive: o.Recursive,
	}
	if o.Apiserver.Enabled {
		loader.Other = o.Apiserver.Collect
	}
	c, err := o.loadInput(ctx, loader, warn)
	if err != nil {
		return err
	}
	o.cluster = c
	o.defaultPod = defaultPodReason(c, o.Filenames)
	if o.ExpandTo != "" {
		size, err := resource.ParseQuantity(o.ExpandTo)
		if err != nil {
			return WithCode(ExitUsage, fmt.Errorf("--expand-to: %w", err))
		}
		c.ExpandPersistentVolumes(size)
	}
	if o.Apiserver.Enabled {
		return nil // the API server runs the input's webhooks itself
	}
	return o.Admission.Run(ctx, c, o.Release.APIServerDefaults(), o.Verbose, s.Err)
}

// loadInput reads the manifests, or with --pod the pod from its cluster.
func (o *CommonOptions) loadInput(ctx context.Context, loader *manifests.Loader, warn func(string)) (*manifests.Cluster, error) {
	if o.Live.Pod != "" {
		c, nodeName, err := o.Live.Load(ctx, o.Release.APIServerDefaults(), o.NodeName, warn)
		if err != nil {
			return nil, err
		}
		o.NodeName = nodeName
		return c, nil
	}
	c, err := loader.Load(o.Filenames)
	if err != nil {
		return nil, WithCode(ExitUsage, loader.WithReferences(c, err))
	}
	return c, judgeInput(c, o.Filenames)
}

// filesFrom is the files a command reads: its -f flags, then its
// positional arguments.
func FilesFrom(flags, args []string) []string {
	return append(append([]string(nil), flags...), args...)
}

// judgeInput refuses an input that was given but holds no object the
// kubelet reads: an empty file, or only kinds it skips (each skipped one
// was warned about as it was read).
func judgeInput(c *manifests.Cluster, files []string) error {
	if len(files) == 0 || c.Count() > 0 {
		return nil
	}
	return WithCode(ExitUsage, fmt.Errorf("nothing usable in %s: no object the kubelet reads (%s)", strings.Join(files, ", "), strings.Join(manifests.Kinds(), ", ")))
}

// defaultPodReason says why the default pod is used, or "" when the input
// has pods.
func defaultPodReason(c *manifests.Cluster, files []string) string {
	if len(c.Pods()) > 0 {
		return ""
	}
	what := "no Pod in the input"
	if len(files) == 0 {
		what = "no -f given"
	}
	return what + ": using the default pod default/" + manifests.DefaultPodName +
		" (a claim, provisioned by CreateVolume when the driver offers CREATE_DELETE_VOLUME, else bound to a PersistentVolume with handle " + manifests.DefaultVolumeHandle +
		"; and an inline volume when the driver's CSIDriver allows Ephemeral; --volume-handle, --pod-uid)"
}
