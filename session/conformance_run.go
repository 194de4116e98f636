package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance/testdriver"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/admission"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/controlplane"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/scenarioinput"
)

// conformanceOptions are the flags of `conformance`.
type ConformanceOptions struct {
	EndpointFlag
	OutputFlag
	TimeoutFlag
	ReleaseFlags
	RootDirFlag
	Streams
	Filenames        []string
	Recursive        bool
	VolumeHandle     string
	VolumeAttributes map[string]string
	ReadOnly         bool
	TestDriver       string
	Focus, Skip      string
	JUnit            string
	NodeName         string
	Verbose          int
	Parallel         int
	List             bool
	Report           string
	Admission        admission.Options
	Apiserver        controlplane.Options

	focus, skip *regexp.Regexp
	testDriver  *testdriver.Definition
	class       *conformance.VolumeClass
	csiDrivers  []*storagev1.CSIDriver
	cluster     *manifests.Cluster
	report      *conformance.Report // the last Run's, for Conformance

	// Observer sees the run as it goes (the command's printer); nil:
	// nothing.
	Observer ConformanceObserver
	// OnResult, when set, is called as each scenario ends (after the
	// observer).
	OnResult func(conformance.Result)
}

// complete takes the files of the arguments, the driver's socket, the
// release and the root dir; --list needs none of them.
func (o *ConformanceOptions) Complete(args []string) error {
	o.Filenames = FilesFrom(o.Filenames, args)
	if o.List {
		return nil
	}
	if err := o.completeEndpoint(); err != nil {
		return err
	}
	if err := o.ValidateOutput(); err != nil {
		return err
	}
	if err := o.CompleteRelease(); err != nil {
		return err
	}
	return o.completeRootDir()
}

// validate checks the flags that need no I/O.
func (o *ConformanceOptions) Validate() error {
	if o.List {
		return nil
	}
	if o.Parallel < 1 {
		return WithCode(ExitUsage, errors.New("--parallel must be at least 1"))
	}
	if err := o.validateTimeout(); err != nil {
		return err
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
			return WithCode(ExitUsage, fmt.Errorf("%s: %w", x.flag, err))
		}
		*x.re = re
	}
	return nil
}

// load loads the CSIDriver objects and fills the defaults.
func (o *ConformanceOptions) load(s Streams) error {
	warn := o.observer().Warning
	if o.NodeName == "" {
		name, err := os.Hostname()
		if err != nil {
			return WithCode(ExitEnvironment, fmt.Errorf("node name: %w", err))
		}
		o.NodeName = name
	}
	if err := o.loadTestDriver(warn); err != nil {
		return err
	}
	if len(o.Filenames) == 0 {
		return nil
	}
	loader := &manifests.Loader{
		Stdin:     s.In,
		Defaults:  o.Release.APIServerDefaults(),
		Warn:      warn,
		Recursive: o.Recursive,
	}
	if o.Apiserver.Enabled {
		loader.Other = o.Apiserver.Collect
	}
	c, err := loader.Load(o.Filenames)
	if err != nil {
		return WithCode(ExitUsage, loader.WithReferences(c, err))
	}
	o.cluster = c
	o.csiDrivers = c.CSIDrivers()
	if len(o.csiDrivers) == 0 {
		return WithCode(ExitUsage, fmt.Errorf("-f: no CSIDriver object in %s", strings.Join(o.Filenames, ", ")))
	}
	if n := len(c.PersistentVolumes()); n > 0 {
		warn(fmt.Sprintf("conformance builds its own volumes: the %d PersistentVolume object(s) given are ignored", n))
	}
	return nil
}

// csiDriverFor picks the object whose name is the driver's: the kubelet
// looks the CSIDriver up by the name the volume gives, which is the name
// the driver registers.
func (o *ConformanceOptions) csiDriverFor(name string) (*storagev1.CSIDriver, error) {
	if len(o.csiDrivers) == 0 {
		return nil, nil
	}
	var names []string
	for _, d := range o.csiDrivers {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name+manifests.DidYouMean(d.Name, []string{name}))
	}
	return nil, WithCode(ExitUsage, fmt.Errorf("no CSIDriver named %q, the name the driver registers (GetPluginInfo); given: %s", name, strings.Join(names, ", ")))
}

// run lists the scenarios (--list), or loads the CSIDriver objects and
// checks the driver.
func (o *ConformanceOptions) Run(ctx context.Context) error {
	s := o.Streams
	if o.List {
		return nil // the list is the printer's (printers.ScenarioList)
	}
	if err := o.load(s); err != nil {
		return err
	}
	co := o.commonOptions()
	var created []string
	var undo undoStack
	defer undo.Run()
	var api *controlplane.Scenarios
	if o.Apiserver.Enabled {
		var err error
		if api, err = o.startWithAPIServer(ctx, co, &created, &undo); err != nil {
			return err
		}
	} else if err := o.endpoint.Check(); err != nil {
		return WithCode(ExitEnvironment, err)
	}
	// The secrets the run hands the driver, collected from every trace, are
	// kept out of whatever quotes the driver.
	sensitive := inputSecrets(o.cluster)
	red := csiclient.Redactor{Sensitive: sensitive}
	probeTrace := csiclient.NewTrace(sensitive)
	dialer := &csiclient.Dialer{Endpoint: o.endpoint}
	info, err := o.probe(ctx, dialer, probeTrace)
	if err != nil {
		return err
	}
	obj, err := o.csiDriverFor(info.Name)
	if err != nil {
		return err
	}
	if !o.Apiserver.Enabled {
		if err := takeRootDir(co, &created, &undo); err != nil {
			return err
		}
	}
	root := co.RootDir
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}

	host := conformance.Host{SELinux: hostHasSELinux()}
	cfg := conformance.Config{
		Conn:             o.Apiserver.Conn(dialer),
		CSIDriver:        obj,
		VolumeHandle:     o.VolumeHandle,
		VolumeAttributes: o.VolumeAttributes,
		InlineReadOnly:   o.ReadOnly,
		TestDriver:       o.testDriver,
		TestDriverFile:   o.TestDriver,
		Focus:            o.focus,
		Skip:             o.skip,
		Timeout:          o.Timeout,
		Release:          o.Release,
		RootDir:          root,
		NodeName:         o.NodeName,
		Host:             host,
		Parallel:         o.Parallel,
		Teardown:         teardownContext(ctx),
		Sensitive:        sensitive,
		Input:            o.cluster,
		Class:            o.class,
	}
	scenarioinput.InlineFromTestDriver(o.testDriver, o.VolumeAttributes, &cfg)
	p := o.observer()
	scenarioinput.FromPods(o.cluster, info.Name, o.VolumeAttributes, &cfg, p.Warning)
	if err := o.checkSelection(cfg, info); err != nil {
		return err
	}
	p.Header(o.header(info, obj, root, len(created) > 0, host, red))
	cfg.OnStart, cfg.OnResult = p.Start, p.Result
	if o.OnResult != nil {
		cfg.OnResult = func(r conformance.Result) { p.Result(r); o.OnResult(r) }
	}
	if err := o.hook(ctx, &cfg, api, p, &undo); err != nil {
		return err
	}
	rep := conformance.Run(ctx, cfg, info, probeTrace)
	o.report = rep
	return o.finish(rep, p, root)
}

// probe asks the driver what it is and does, before any scenario; an
// unreachable driver is the environment's fault, an interrupt the user's.
func (o *ConformanceOptions) probe(ctx context.Context, dialer *csiclient.Dialer, trace *csiclient.Trace) (*conformance.DriverInfo, error) {
	info, err := conformance.Probe(ctx, &csiclient.Recorder{Next: dialer, Trace: trace}, o.Timeout)
	if err == nil {
		return info, nil
	}
	var ue *conformance.UnreachableError
	switch {
	case ctx.Err() != nil:
		return nil, WithCode(ExitInterrupted, errors.New("interrupted while probing the driver (GetPluginInfo, capabilities), before any scenario ran"))
	case errors.As(err, &ue):
		return nil, WithCode(ExitEnvironment, err)
	}
	return nil, WithCode(ExitFailed, err)
}

// finish writes the JUnit file and prints the summary, and gives the
// run's exit code.
func (o *ConformanceOptions) finish(rep *conformance.Report, p ConformanceObserver, root string) error {
	var junitErr error
	if o.JUnit != "" {
		junitErr = writeJUnit(o.JUnit, rep)
	}
	reportErr := o.writeConformanceReport(rep)
	var written ConformanceFiles
	if o.JUnit != "" && junitErr == nil {
		written.JUnit = o.JUnit
	}
	if o.Report != "" && reportErr == nil {
		written.Report = o.Report
	}
	p.Summary(rep, written)
	switch {
	case junitErr != nil:
		return WithCode(ExitEnvironment, fmt.Errorf("--junit: %w", junitErr))
	case rep.Abandoned:
		return WithCode(ExitInterrupted, fmt.Errorf("interrupted during the teardown of the running scenarios, which was abandoned; what they made is left; finish with: csi-kubelet-sim cleanup --root-dir %s --endpoint %s", root, o.Endpoint))
	case reportErr != nil:
		return WithCode(ExitEnvironment, reportErr)
	case rep.Interrupted:
		return WithCode(ExitInterrupted, errors.New("interrupted; the running scenarios were torn down and cleaned up"))
	case rep.Failed():
		pass, fail, _ := rep.Counts()
		msg := fmt.Sprintf("%d of %d scenarios failed", fail, pass+fail)
		if v := rep.Volume; v != nil && v.Err != nil {
			msg += "; " + rep.Redactor.Scrub(v.Err.Error())
		}
		return WithCode(ExitFailed, errors.New(msg))
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

// checkSelection refuses --focus/--skip that leave no scenario to run: a
// run of nothing would pass.
func (o *ConformanceOptions) checkSelection(cfg conformance.Config, info *conformance.DriverInfo) error {
	if o.focus == nil && o.skip == nil {
		return nil
	}
	var names []string
	for _, sc := range conformance.Scenarios(cfg, info) {
		if (o.focus == nil || o.focus.MatchString(sc.Name)) && (o.skip == nil || !o.skip.MatchString(sc.Name)) {
			return nil
		}
		names = append(names, sc.Name)
	}
	return WithCode(ExitUsage, fmt.Errorf("--focus %q --skip %q select none of the %d scenarios for this driver: %s", o.Focus, o.Skip, len(names), strings.Join(names, " ")))
}

// commonOptions are what conformance shares with run for the root dir and
// --apiserver: its root dir and its own release (--kubelet-version), which
// the API server's version skew is judged against.
func (o *ConformanceOptions) commonOptions() *CommonOptions {
	return &CommonOptions{RootDirFlag: o.RootDirFlag, ReleaseFlags: o.ReleaseFlags, lockAs: "conformance", notices: o.observer()}
}

// observer is the run's observer: the command's printer, or none.
func (o *ConformanceOptions) observer() ConformanceObserver {
	if o.Observer == nil {
		return noConformanceObserver{}
	}
	return o.Observer
}

// loadTestDriver reads --testdriver strictly; a bad file is bad input
// (exit 2), named with its field.
func (o *ConformanceOptions) loadTestDriver(warn func(string)) error {
	if o.TestDriver == "" {
		return nil
	}
	var err error
	o.testDriver, o.class, err = scenarioinput.TestDriver(o.TestDriver, o.Release.APIServerDefaults(), warn)
	return err
}

// header is what the run knows before its first scenario.
func (o *ConformanceOptions) header(info *conformance.DriverInfo, obj *storagev1.CSIDriver, root string, ownedRoot bool, host conformance.Host, red csiclient.Redactor) ConformanceHeader {
	h := ConformanceHeader{
		Driver: info, CSIDriver: obj, Files: o.Filenames, Endpoint: o.endpoint,
		Release: o.Release, FeatureGates: o.FeatureGates, NodeName: o.NodeName,
		RootDir: root, OwnedRoot: ownedRoot, Host: host, Redactor: red, Rerun: o.RerunHint,
	}
	if obj != nil {
		h.CSIDriverSummary = CSIDriverSummary(obj)
		// The file that holds it, of all the input (CRDs, RBAC, a pod).
		if o.cluster != nil {
			if src := o.cluster.SourceOf("CSIDriver", "", obj.Name); src.File != "" {
				h.Files = []string{src.File}
			}
		}
	}
	if o.testDriver != nil {
		h.TestDriverFile, h.TestDriverName = o.TestDriver, o.testDriver.DriverInfo.Name
	}
	return h
}

func CSIDriverSummary(d *storagev1.CSIDriver) string {
	s := d.Spec
	return fmt.Sprintf("attachRequired=%t podInfoOnMount=%t volumeLifecycleModes=%v fsGroupPolicy=%s requiresRepublish=%t seLinuxMount=%t storageCapacity=%t tokenRequests=%d",
		*s.AttachRequired, *s.PodInfoOnMount, s.VolumeLifecycleModes, *s.FSGroupPolicy, *s.RequiresRepublish, *s.SELinuxMount, *s.StorageCapacity, len(s.TokenRequests))
}
