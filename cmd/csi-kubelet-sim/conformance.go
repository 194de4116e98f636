package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/conformance"
)

// conformanceOptions are the flags of `conformance`.
type conformanceOptions struct {
	Endpoint         string
	Filenames        []string
	VolumeHandle     string
	VolumeAttributes map[string]string
	Focus, Skip      string
	JUnit            string
	Output           string
	Timeout          time.Duration
	KubeletVersion   string
	FeatureGates     string
	RootDir          string
	NodeName         string
	Verbose          int

	endpoint    csiclient.Endpoint
	version     node.Version
	gates       *node.FeatureGates
	focus, skip *regexp.Regexp
	csiDrivers  []*storagev1.CSIDriver
	cluster     *cluster.Cluster
}

func newConformanceOptions() *conformanceOptions {
	return &conformanceOptions{Output: "text", Timeout: node.DefaultTimeout, KubeletVersion: node.DefaultVersion.String()}
}

func (o *conformanceOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Endpoint, "endpoint", os.Getenv("CSI_ENDPOINT"), "the driver's socket: unix:///path or a path (default $CSI_ENDPOINT)")
	fs.StringArrayVarP(&o.Filenames, "filename", "f", nil, "the driver's CSIDriver object: a file, a directory or - (repeatable); without it, scenarios come from the driver's capabilities and the kubelet behaves as without a CSIDriver")
	fs.StringVar(&o.VolumeHandle, "volume-handle", "", "handle of a pre-provisioned volume for the PersistentVolume (default: a 1Gi volume made by CreateVolume when the driver has CREATE_DELETE_VOLUME, else "+conformance.DefaultVolumeHandle+")")
	fs.StringToStringVar(&o.VolumeAttributes, "volume-attributes", nil, "volumeAttributes of the PersistentVolume and of inline volumes, k=v,...")
	fs.StringVar(&o.Focus, "focus", "", "run only the scenarios whose name matches this regexp")
	fs.StringVar(&o.Skip, "skip", "", "leave out the scenarios whose name matches this regexp")
	fs.StringVar(&o.JUnit, "junit", "", "also write the results as JUnit XML to this file")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "text, or json (one object per scenario, then a summary)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "the kubelet's per-operation timeout (csiTimeout); a call taking more than half of it fails timing/half-timeout")
	fs.StringVar(&o.KubeletVersion, "kubelet-version", o.KubeletVersion, "the kubelet release to reproduce, 1.30 to 1.37")
	fs.StringVar(&o.FeatureGates, "feature-gates", "", "kubelet feature gates over the version's defaults, A=true,B=false")
	fs.StringVar(&o.RootDir, "root-dir", "", "where each scenario gets its kubelet root dir (default: a fresh temp dir, removed afterwards)")
	fs.StringVar(&o.NodeName, "node-name", "", "the node's name (default: the host name)")
	fs.CountVarP(&o.Verbose, "verbose", "v", "print each scenario's calls and notes (-vv: the kubelet's own steps too)")
}

// validate checks the flags that need no I/O.
func (o *conformanceOptions) validate() error {
	ep, err := csiclient.ParseEndpoint(o.Endpoint)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--endpoint: %w", err))
	}
	o.endpoint = ep
	if o.Output != "text" && o.Output != "json" {
		return withCode(exitUsage, fmt.Errorf("--output %q: want text or json", o.Output))
	}
	if o.version, err = node.ParseVersion(o.KubeletVersion); err != nil {
		return withCode(exitUsage, fmt.Errorf("--kubelet-version: %w", err))
	}
	if o.gates, err = node.NewFeatureGates(o.version, o.FeatureGates); err != nil {
		return withCode(exitUsage, fmt.Errorf("--feature-gates: %w", err))
	}
	if o.Timeout <= 0 {
		return withCode(exitUsage, errors.New("--timeout must be positive"))
	}
	for _, x := range []struct {
		flag, expr string
		re         **regexp.Regexp
	}{{"--focus", o.Focus, &o.focus}, {"--skip", o.Skip, &o.skip}} {
		if x.expr == "" {
			continue
		}
		re, err := regexp.Compile(x.expr)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("%s: %w", x.flag, err))
		}
		*x.re = re
	}
	if o.RootDir != "" {
		abs, err := filepath.Abs(o.RootDir)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--root-dir: %w", err))
		}
		o.RootDir = abs
	}
	return nil
}

// complete loads the CSIDriver objects and fills the defaults.
func (o *conformanceOptions) complete(s streams) error {
	if o.NodeName == "" {
		name, err := os.Hostname()
		if err != nil {
			return withCode(exitEnvironment, fmt.Errorf("node name: %w", err))
		}
		o.NodeName = name
	}
	if len(o.Filenames) == 0 {
		return nil
	}
	loader := &cluster.Loader{
		Stdin:    s.In,
		Defaults: o.gates.APIServerDefaults(),
		Warn:     warnTo(s),
	}
	c, err := loader.Load(o.Filenames)
	if err != nil {
		return withCode(exitUsage, err)
	}
	o.cluster = c
	o.csiDrivers = c.CSIDrivers()
	if len(o.csiDrivers) == 0 {
		return withCode(exitUsage, fmt.Errorf("-f: no CSIDriver object in %s", strings.Join(o.Filenames, ", ")))
	}
	if n := len(c.Pods()) + len(c.PersistentVolumes()); n > 0 {
		warnTo(s)(fmt.Sprintf("conformance builds its own pods and volumes: the %d Pod and PersistentVolume object(s) given are ignored", n))
	}
	return nil
}

// csiDriverFor picks the object whose name is the driver's: the kubelet
// looks the CSIDriver up by the name the volume gives, which is the name
// the driver registers.
func (o *conformanceOptions) csiDriverFor(name string) (*storagev1.CSIDriver, error) {
	if len(o.csiDrivers) == 0 {
		return nil, nil
	}
	var names []string
	for _, d := range o.csiDrivers {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	return nil, withCode(exitUsage, fmt.Errorf("no CSIDriver named %q, the name the driver registers (GetPluginInfo); given: %s", name, strings.Join(names, ", ")))
}

// runConformance checks the driver against what a kubelet needs of it.
func runConformance(ctx context.Context, args []string, s streams) error {
	o := newConformanceOptions()
	fs := pflag.NewFlagSet("conformance", pflag.ContinueOnError)
	fs.SetOutput(s.Err)
	o.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		return withCode(exitUsage, err)
	}
	if fs.NArg() > 0 {
		return withCode(exitUsage, fmt.Errorf("conformance: unexpected arguments %v", fs.Args()))
	}
	if err := o.validate(); err != nil {
		return err
	}
	if err := o.complete(s); err != nil {
		return err
	}
	return o.run(ctx, s)
}

func (o *conformanceOptions) run(ctx context.Context, s streams) error {
	if err := o.endpoint.Check(); err != nil {
		return withCode(exitEnvironment, err)
	}
	probeTrace := csiclient.NewTrace()
	dialer := &csiclient.Dialer{Endpoint: o.endpoint}
	info, err := conformance.Probe(ctx, &csiclient.Recorder{Next: dialer, Trace: probeTrace}, o.Timeout)
	if err != nil {
		var ue *conformance.UnreachableError
		if errors.As(err, &ue) {
			return withCode(exitEnvironment, err)
		}
		return withCode(exitFailed, err)
	}
	obj, err := o.csiDriverFor(info.Name)
	if err != nil {
		return err
	}
	co := &commonOptions{RootDir: o.RootDir}
	created, err := co.prepareRootDir()
	if err != nil {
		return err
	}
	defer removeDirs(created)
	root := co.RootDir
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}

	p := &conformancePrinter{s: s, json: o.Output == "json", verbose: o.Verbose}
	host := conformance.Host{SELinux: dirExists("/sys/fs/selinux")}
	p.header(o, info, obj, root, len(created) > 0, host)
	cfg := conformance.Config{
		Conn:             dialer,
		CSIDriver:        obj,
		VolumeHandle:     o.VolumeHandle,
		VolumeAttributes: o.VolumeAttributes,
		Focus:            o.focus,
		Skip:             o.skip,
		Timeout:          o.Timeout,
		Version:          o.version,
		Gates:            o.gates,
		RootDir:          root,
		NodeName:         o.NodeName,
		Host:             host,
		OnStart:          p.start,
		OnResult:         p.result,
	}
	if o.Verbose > 0 && !p.json {
		cfg.Sink = func(string) csiclient.Sink {
			return csiclient.NewTextPrinter(s.Out, csiclient.Redactor{}, o.Verbose > 1, false)
		}
	}
	rep := conformance.Run(ctx, cfg, info, probeTrace)
	var junitErr error
	if o.JUnit != "" {
		junitErr = writeJUnit(o.JUnit, rep)
	}
	p.summary(rep, o.JUnit)
	switch {
	case junitErr != nil:
		return withCode(exitEnvironment, fmt.Errorf("--junit: %w", junitErr))
	case rep.Interrupted:
		return withCode(exitInterrupted, errors.New("interrupted; the running scenario was torn down and cleaned up"))
	case rep.Failed():
		pass, fail, _ := rep.Counts()
		msg := fmt.Sprintf("%d of %d scenarios failed", fail, pass+fail)
		if v := rep.Volume; v != nil && v.Err != nil {
			msg += "; " + v.Err.Error()
		}
		return withCode(exitFailed, errors.New(msg))
	}
	return nil
}

func writeJUnit(path string, rep *conformance.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := conformance.WriteJUnit(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
