// Package drivertest runs csi-kubelet-sim from a CSI driver's own Go
// tests, the way csi-test's pkg/sanity runs csi-sanity: Conformance runs
// the conformance scenarios as subtests (so that `go test -run` focuses
// them), and RunPod runs pods through the simulated kubelet and returns
// every call the driver got, with its request and answer, for the test's
// own assertions. Both go through the engine the command line uses
// (package session), configured by the same options as its flags.
//
// Nothing here needs root unless the driver or the volumes do: the
// kubelet's own steps for file-system volumes are directories and files
// under the root dir (a t.TempDir() unless Config.RootDir says), while
// its block steps (a loop device on the published file) need root, and
// conformance skips them with that reason.
package drivertest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// Config is what the command line's flags say; the zero value of a field
// is the flag's default.
type Config struct {
	// Endpoint is the driver's socket: "unix:///path/csi.sock" or a path
	// (--endpoint). Required.
	Endpoint string
	// Files are the manifests (-f): the CSIDriver, pods, PersistentVolumes,
	// claims, StorageClasses, Secrets, ... Conformance takes the first
	// pod's CSI volumes as its scenarios' volumes (docs/conformance.md).
	Files []string
	// Objects are manifests given as objects (a CSIDriver, a Pod, ...),
	// written to files beside Files.
	Objects []runtime.Object
	// TestDriver is Kubernetes' external storage test driver definition
	// (--testdriver; Conformance only).
	TestDriver string
	// KubeletVersion ("1.37") and FeatureGates ("A=true,B=false") are the
	// kubelet simulated (--kubelet-version, --feature-gates).
	KubeletVersion, FeatureGates string
	// NodeName is the node's name (--node-name; default: the host name).
	NodeName string
	// RootDir is the kubelet's root dir (--root-dir; default: a
	// t.TempDir()).
	RootDir string
	// VolumeHandle is the pre-provisioned volume to use (--volume-handle).
	VolumeHandle string
	// VolumeAttributes and ReadOnly are conformance's inline volumes'
	// (--volume-attributes, --read-only).
	VolumeAttributes map[string]string
	ReadOnly         bool
	// Timeout is the kubelet's per-operation timeout (--timeout, 2m).
	Timeout time.Duration
}

// files are the config's manifests, its objects written into dir.
func (c Config) files(dir string) ([]string, error) {
	files := append([]string(nil), c.Files...)
	for i, obj := range c.Objects {
		if obj.GetObjectKind().GroupVersionKind().Empty() {
			gvks, _, err := scheme.Scheme.ObjectKinds(obj)
			if err != nil || len(gvks) == 0 {
				return nil, fmt.Errorf("drivertest: Objects[%d]: a %T has no apiVersion and kind, and the scheme knows none: %v", i, obj, err)
			}
			obj = obj.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("drivertest: Objects[%d]: %w", i, err)
		}
		p := filepath.Join(dir, fmt.Sprintf("object-%d.yaml", i))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	return files, nil
}

// rootDir is the config's root dir, or a fresh one of t's.
func (c Config) rootDir(t *testing.T) string {
	if c.RootDir != "" {
		return c.RootDir
	}
	return t.TempDir()
}

// Conformance runs every conformance scenario against the driver, each as
// a subtest named for the scenario (`go test -run 'TestX/lifecycle/'`
// runs those of the lifecycle area): a scenario that does not apply to
// the driver is skipped with its reason, a failed one fails with what the
// driver did, what the kubelet needs and the section of docs/kubelet.md
// that says so, and a passed one logs its notes. Each scenario is a run of
// its own, with its own root dir and volume.
func Conformance(t *testing.T, cfg Config) {
	t.Helper()
	names := []string{}
	if cfg.TestDriver != "" {
		names = append(names, "testdriver/declarations")
	}
	for _, s := range session.AllScenarios() {
		names = append(names, s.Name)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) { conformanceScenario(t, cfg, name) })
	}
}

// conformanceScenario runs one scenario as `conformance --focus` does.
func conformanceScenario(t *testing.T, cfg Config, name string) {
	t.Helper()
	files := cfg.prepare(t)
	o := session.NewConformanceOptions(cfg.Endpoint)
	o.Filenames, o.TestDriver, o.NodeName = files, cfg.TestDriver, cfg.NodeName
	o.RootDir = cfg.rootDir(t)
	o.VolumeHandle, o.VolumeAttributes, o.ReadOnly = cfg.VolumeHandle, cfg.VolumeAttributes, cfg.ReadOnly
	o.Focus = session.FocusOne(name)
	cfg.setCommon(&o.ReleaseFlags, &o.TimeoutFlag)
	rep, err := session.Conformance(t.Context(), o)
	if rep == nil {
		t.Fatalf("conformance (exit %d): %v", session.ExitCode(err), err)
	}
	var res *conformance.Result
	for i := range rep.Results {
		if rep.Results[i].Name == name {
			res = &rep.Results[i]
		}
	}
	if res == nil {
		t.Fatalf("conformance ran no scenario %s (exit %d): %v", name, session.ExitCode(err), err)
	}
	for _, n := range res.Notes {
		t.Log(n)
	}
	switch res.Status {
	case conformance.Skip:
		t.Skip(res.Message)
	case conformance.Fail:
		for _, f := range res.Failures {
			t.Error(f.String())
		}
		if len(res.Failures) == 0 {
			t.Error(res.Message)
		}
	}
	// A passed scenario with an error is the run's own: a volume left on
	// the storage, an earlier run's leftovers in the root dir.
	if err != nil && res.Status == conformance.Pass {
		t.Errorf("conformance (exit %d): %v", session.ExitCode(err), err)
	}
}

// prepare checks the config and returns its manifests' files (its
// objects written into a temp dir of t's).
func (c Config) prepare(t *testing.T) []string {
	t.Helper()
	if c.Endpoint == "" {
		t.Fatal(errNoEndpoint)
	}
	files, err := c.files(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// setCommon sets the release and timeout flags the config names.
func (c Config) setCommon(r *session.ReleaseFlags, to *session.TimeoutFlag) {
	if c.KubeletVersion != "" {
		r.KubeletVersion = c.KubeletVersion
	}
	r.FeatureGates = c.FeatureGates
	if c.Timeout > 0 {
		to.Timeout = c.Timeout
	}
}

// Result is what a run of pods did.
type Result struct {
	// Outcome is the kubelet's: the pods, their volumes, what was left.
	Outcome *node.Outcome
	// Calls are every call the driver got, in the order they ended, with
	// the request and the answer (nil for a failed call) as the driver
	// saw them, secrets included.
	Calls []csiclient.Call
	// Steps are the kubelet's own steps between the calls.
	Steps []csiclient.Step
	// Err is the run's error, as `run` reports it (nil: exit 0), and
	// ExitCode the command's exit code.
	Err      error
	ExitCode int
}

// RunPod runs the pods of cfg's manifests (the default pod without any)
// through the simulated kubelet against the driver, as `run` does, and
// returns every call. A run that fails (the driver failed a call, a mount
// was left) fails t with the error, as `run` exits non-zero; a test that
// expects the failure calls RunPodExpectingError.
func RunPod(t *testing.T, cfg Config) *Result {
	t.Helper()
	res := runPod(t, cfg)
	if res.Err != nil {
		t.Errorf("run (exit %d): %v", res.ExitCode, res.Err)
	}
	return res
}

// RunPodExpectingError is RunPod for a run the test expects to fail: the
// error is the result's, t fails only when nothing ran.
func RunPodExpectingError(t *testing.T, cfg Config) *Result {
	t.Helper()
	res := runPod(t, cfg)
	if res.Err == nil {
		t.Errorf("run succeeded, want it to fail")
	}
	return res
}

func runPod(t *testing.T, cfg Config) *Result {
	t.Helper()
	files := cfg.prepare(t)
	o := session.NewRunOptions(cfg.Endpoint)
	o.Filenames, o.NodeName, o.RootDir, o.VolumeHandle = files, cfg.NodeName, cfg.rootDir(t), cfg.VolumeHandle
	cfg.setCommon(&o.ReleaseFlags, &o.TimeoutFlag)
	rr, err := session.RunPod(t.Context(), o)
	if rr == nil {
		t.Fatalf("run (exit %d): %v", session.ExitCode(err), err)
	}
	res := &Result{Outcome: rr.Outcome, Calls: rr.Calls, Steps: rr.Steps, Err: err}
	if err != nil {
		res.ExitCode = session.ExitCode(err)
	}
	return res
}

// Requests are the requests of type T the driver got, in order: for
// example Requests[*csi.NodePublishVolumeRequest](res).
func Requests[T proto.Message](r *Result) []T {
	var out []T
	for _, c := range r.Calls {
		if req, ok := c.Request.(T); ok {
			out = append(out, req)
		}
	}
	return out
}

// Failed are the calls the driver failed.
func (r *Result) Failed() []csiclient.Call {
	var out []csiclient.Call
	for _, c := range r.Calls {
		if c.Err != nil {
			out = append(out, c)
		}
	}
	return out
}

// errNoEndpoint: the one option without a default.
var errNoEndpoint = errors.New("drivertest: Config.Endpoint is empty: the driver's socket")
