package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
)

// replayOptions are `run --kubeconfig FILE --pod NAMESPACE/NAME`: a pod and
// what its volumes reference, read (only read) from a live cluster, then
// run against the local driver as if they were the input.
type replayOptions struct {
	Kubeconfig string
	Pod        string

	input  *cluster.PodInput
	server string
}

func (o *replayOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "with --pod: the cluster to read the pod from (default $KUBECONFIG); nothing is written there")
	fs.StringVar(&o.Pod, "pod", "", "replay this pod of the cluster (NAMESPACE/NAME): the pod and what its volumes reference are read and run against the local driver")
}

// load reads the pod's objects; stdin is what the loader reads them from
// ("-" is added to the files).
func (o *replayOptions) load(ctx context.Context, co *commonOptions) (io.Reader, error) {
	if o.Pod == "" {
		if o.Kubeconfig != "" {
			return nil, withCode(exitUsage, errors.New("--kubeconfig needs --pod NAMESPACE/NAME"))
		}
		return nil, nil
	}
	ns, name, ok := strings.Cut(o.Pod, "/")
	if !ok || ns == "" || name == "" {
		return nil, withCode(exitUsage, fmt.Errorf("--pod %q: want NAMESPACE/NAME", o.Pod))
	}
	switch {
	case co.apiserver.Enabled:
		return nil, withCode(exitUsage, errors.New("--pod reads a live cluster, --apiserver makes one: not both"))
	case slices.Contains(co.Filenames, "-"):
		return nil, withCode(exitUsage, errors.New("--pod: the pod's objects take the place of stdin; give the other manifests as files"))
	}
	path := o.Kubeconfig
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		return nil, withCode(exitUsage, errors.New("--pod needs --kubeconfig FILE (or $KUBECONFIG)"))
	}
	lc, err := cluster.OpenKubeconfig(path)
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("--kubeconfig: %w", err))
	}
	in, err := lc.ReadPod(ctx, ns, name)
	if err != nil {
		return nil, withCode(exitEnvironment, fmt.Errorf("--pod %s: %w", o.Pod, err))
	}
	o.input, o.server = in, lc.Server
	co.Filenames = append(co.Filenames, "-")
	return bytes.NewReader(in.YAML), nil
}

// announce says what was read, and what the cluster did not have.
func (o *replayOptions) announce(ss *session) {
	if o.input == nil {
		return
	}
	ss.announce(fmt.Sprintf("read from the cluster at %s (read only; stdin in the messages): %s", o.server, strings.Join(o.input.Read, ", ")))
	if len(o.input.Absent) > 0 {
		ss.announce("the cluster has no " + strings.Join(o.input.Absent, ", "))
	}
}
