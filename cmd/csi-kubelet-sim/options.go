package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/cluster"
)

// commonOptions are the flags `run` and `plan` share.
type commonOptions struct {
	Filenames      []string
	RootDir        string
	NodeName       string
	KubeletVersion string
	FeatureGates   string
	SELinux        bool
	SELinuxLevel   string
	Output         string
	ShowSecrets    bool
	Timeout        time.Duration
	Verbose        int
	PodUID         string
	MaxAttempts    int
	ExpandTo       string
	RetryFor       time.Duration
	VolumeHandle   string
	serviceAccountOptions

	version node.Version
	gates   *node.FeatureGates
	cluster *cluster.Cluster
}

func (o *commonOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&o.Filenames, "filename", "f", nil, "manifests: a file, a directory or - for stdin (repeatable)")
	fs.StringVar(&o.RootDir, "root-dir", "", "the kubelet root dir (default: a fresh temp dir, removed afterwards)")
	fs.StringVar(&o.NodeName, "node-name", "", "the node's name (default: the host name)")
	fs.StringVar(&o.KubeletVersion, "kubelet-version", node.DefaultVersion.String(), "the kubelet release to reproduce, 1.30 to 1.37")
	fs.StringVar(&o.FeatureGates, "feature-gates", "", "kubelet feature gates over the version's defaults, A=true,B=false")
	fs.BoolVar(&o.SELinux, "selinux", true, "the node has SELinux enabled (false: no context= mount option, as on a node without SELinux)")
	fs.StringVar(&o.SELinuxLevel, "selinux-level", "", "MCS level for seLinuxOptions without one (default: a random level, as the kubelet allocates)")
	fs.StringVarP(&o.Output, "output", "o", "text", "text or json (one object per line)")
	fs.BoolVar(&o.ShowSecrets, "show-secrets", false, "print secrets and tokens instead of redacting them")
	fs.DurationVar(&o.Timeout, "timeout", node.DefaultTimeout, "timeout of each kubelet operation, as the kubelet's csiTimeout")
	fs.CountVarP(&o.Verbose, "verbose", "v", "more detail: the kubelet's own steps (directories, files, objects read)")
	fs.StringVar(&o.ExpandTo, "expand-to", "", "make every CSI PV this big (e.g. 2Gi) while its claim's status keeps the old size, so the kubelet calls NodeExpandVolume")
	fs.IntVar(&o.MaxAttempts, "max-attempts", 1, "attempts per kubelet operation; a real kubelet retries forever with its backoff (500ms doubling to 2m2s)")
	fs.DurationVar(&o.RetryFor, "retry-for", 0, "keep retrying a failed operation with the kubelet's backoff for this long")
	fs.StringVar(&o.PodUID, "pod-uid", "", "UID of the default pod (used when the manifests hold no Pod)")
	fs.StringVar(&o.VolumeHandle, "volume-handle", "", "volume handle of the default pod's PersistentVolume")
	o.serviceAccountOptions.addFlags(fs)
}

// complete checks the flags and loads the manifests.
func (o *commonOptions) complete(s streams, warn func(string)) error {
	if o.Output != "text" && o.Output != "json" {
		return withCode(exitUsage, fmt.Errorf("--output %q: want text or json", o.Output))
	}
	v, err := node.ParseVersion(o.KubeletVersion)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--kubelet-version: %w", err))
	}
	o.version = v
	if o.gates, err = node.NewFeatureGates(v, o.FeatureGates); err != nil {
		return withCode(exitUsage, fmt.Errorf("--feature-gates: %w", err))
	}
	if o.Timeout <= 0 {
		return withCode(exitUsage, errors.New("--timeout must be positive"))
	}
	if o.NodeName == "" {
		if o.NodeName, err = os.Hostname(); err != nil {
			return withCode(exitEnvironment, fmt.Errorf("node name: %w", err))
		}
	}
	if err := o.serviceAccountOptions.complete(); err != nil {
		return err
	}
	loader := &cluster.Loader{
		Stdin:    s.In,
		Defaults: o.gates.APIServerDefaults(),
		Warn:     warn,
	}
	c, err := loader.Load(o.Filenames)
	if err != nil {
		return withCode(exitUsage, err)
	}
	o.cluster = c
	if o.ExpandTo != "" {
		size, err := resource.ParseQuantity(o.ExpandTo)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--expand-to: %w", err))
		}
		c.ExpandPersistentVolumes(size)
	}
	return nil
}

// defaultPod adds the default pod when the manifests hold none.
func (o *commonOptions) defaultPod(driver string) error {
	if len(o.cluster.Pods()) > 0 {
		return nil
	}
	_, err := o.cluster.AddDefaultPod(cluster.DefaultPod{
		Driver:         driver,
		UID:            types.UID(o.PodUID),
		VolumeHandle:   o.VolumeHandle,
		NodeName:       o.NodeName,
		AttachmentName: node.AttachmentName,
	})
	if err != nil {
		return withCode(exitUsage, err)
	}
	return nil
}

// prepareRootDir makes the root dir. It returns the directories it
// created, root last, so that they can all be removed afterwards; none when
// the root dir existed.
func (o *commonOptions) prepareRootDir() (created []string, err error) {
	if o.RootDir == "" {
		d, err := os.MkdirTemp("", "csi-kubelet-sim-")
		if err != nil {
			return nil, withCode(exitEnvironment, fmt.Errorf("root dir: %w", err))
		}
		o.RootDir = d
		return []string{d}, nil
	}
	fi, err := os.Stat(o.RootDir)
	if err == nil {
		if !fi.IsDir() {
			return nil, withCode(exitEnvironment, fmt.Errorf("--root-dir %s: not a directory", o.RootDir))
		}
		return nil, nil
	}
	if !os.IsNotExist(err) {
		return nil, withCode(exitEnvironment, fmt.Errorf("--root-dir: %w", err))
	}
	var missing []string
	for d := o.RootDir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append([]string{d}, missing...)
	}
	for _, d := range missing {
		if err := os.Mkdir(d, 0o750); err != nil {
			removeDirs(created)
			return nil, withCode(exitEnvironment, fmt.Errorf("--root-dir: %w", err))
		}
		created = append(created, d)
	}
	return created, nil
}

// removeDirs removes directories made by prepareRootDir, deepest first;
// only empty ones go.
func removeDirs(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}
