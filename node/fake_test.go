package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// newFakeDriver is the csifake driver node tests use: testDriver on
// testNodeID with the given capabilities, a driver that makes and removes
// its targets (without mounting), and that notes what was on disk as each
// request arrived (see seen).
func newFakeDriver(caps ...csi.NodeServiceCapability_RPC_Type) *csifake.Driver {
	return csifake.New(csifake.Config{
		Name: testDriver, VendorVersion: "v1.2.3", NodeID: testNodeID, Capabilities: caps,
		ManageTargets: true, Observe: observeDisk,
	})
}

const (
	testDriver = "hostpath.csi.k8s.io"
	testNode   = "node-1"
	testNodeID = "node-1-id"
)

// diskSeen is what was on disk when NodeStage or NodePublish arrived.
type diskSeen struct {
	VolData        string // content of vol_data.json beside the staging/target path ("" if absent)
	TargetExisted  bool   // NodePublish: target_path itself existed
	ParentExisted  bool   // NodePublish: the parent of target_path existed
	StagingExisted bool   // NodeStage: staging_target_path existed
}

func observeDisk(_ context.Context, _ string, req proto.Message) any {
	switch r := req.(type) {
	case *csi.NodeStageVolumeRequest:
		return diskSeen{
			StagingExisted: isDir(r.StagingTargetPath),
			VolData:        readFile(filepath.Join(filepath.Dir(r.StagingTargetPath), "vol_data.json")),
		}
	case *csi.NodePublishVolumeRequest:
		return diskSeen{
			TargetExisted: exists(r.TargetPath),
			ParentExisted: isDir(filepath.Dir(r.TargetPath)),
			VolData:       readFile(filepath.Join(filepath.Dir(r.TargetPath), "vol_data.json")),
		}
	}
	return diskSeen{}
}

// seen is what was on disk when the call arrived.
func seen(c csifake.Call) diskSeen {
	d, _ := c.Observed.(diskSeen)
	return d
}

// keepTarget makes NodeUnpublishVolume succeed and leave target_path in
// place (a buggy driver).
func keepTarget(d *csifake.Driver) {
	d.Inject("NodeUnpublishVolume", csifake.Fault{Func: func(context.Context, proto.Message, csifake.Answer) (proto.Message, error) {
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}})
}

// litterTarget makes NodePublishVolume leave a file, driver-file, in the
// target.
func litterTarget(d *csifake.Driver) {
	d.Inject("NodePublishVolume", csifake.Fault{Func: func(_ context.Context, req proto.Message, answer csifake.Answer) (proto.Message, error) {
		resp, err := answer()
		if err != nil {
			return resp, err
		}
		p := filepath.Join(req.(*csi.NodePublishVolumeRequest).GetTargetPath(), "driver-file")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return resp, nil
	}})
}

// withoutUsage makes NodeGetVolumeStats answer without usage (a driver
// that reports only the volume condition).
func withoutUsage(d *csifake.Driver) {
	d.SetResponse("NodeGetVolumeStats", &csi.NodeGetVolumeStatsResponse{})
}

// seq renders calls as "Operation:Method" ("Operation:NodeGetCapabilities(ASKING)").
func seq(calls []csifake.Call) []string {
	out := make([]string, 0, len(calls))
	for _, c := range calls {
		s := c.Labels.Operation + ":" + c.Method
		if c.Labels.Asking != "" {
			s += "(" + c.Labels.Asking + ")"
		}
		out = append(out, s)
	}
	return out
}

// only returns the calls of one method.
func only(calls []csifake.Call, method string) []csifake.Call {
	var out []csifake.Call
	for _, c := range calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// one returns the single call of method, failing the test if there is not
// exactly one.
func one[T proto.Message](t *testing.T, calls []csifake.Call, method string) T {
	t.Helper()
	cs := only(calls, method)
	if len(cs) != 1 {
		t.Fatalf("want exactly one %s, got %d in %v", method, len(cs), seq(calls))
	}
	r, ok := cs[0].Request.(T)
	if !ok {
		t.Fatalf("%s request is %T", method, cs[0].Request)
	}
	return r
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

// testEnv is a registered simulated kubelet on node-1 with a fake driver.
type testEnv struct {
	t       *testing.T
	root    string
	drv     *csifake.Driver
	cluster *manifests.Cluster
	trace   *csiclient.Trace
	k       *Kubelet
}

type envOption func(*Config)

func withVersion(minor int) envOption {
	return func(c *Config) {
		g, _ := release.NewFeatureGates(release.Version{Minor: minor}, "")
		c.Release = release.Release{Version: release.Version{Minor: minor}, Gates: g}
	}
}

// withGates sets the release and feature gates over its defaults.
func withGates(t *testing.T, minor int, gates string) envOption {
	g, err := release.NewFeatureGates(release.Version{Minor: minor}, gates)
	if err != nil {
		t.Fatalf("gates %q at 1.%d: %v", gates, minor, err)
	}
	return func(c *Config) { c.Release = release.Release{Version: release.Version{Minor: minor}, Gates: g} }
}

// newEnv loads the manifests, starts a kubelet and registers the driver;
// the registration calls are forgotten.
func newEnv(t *testing.T, manifests string, drv *csifake.Driver, opts ...envOption) *testEnv {
	t.Helper()
	e := newUnregisteredEnv(t, manifests, drv, opts...)
	if _, err := e.k.vm.Register(context.Background()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	drv.ClearCalls()
	return e
}

// newUnregisteredEnv is the one place node tests build a Kubelet: when the
// constructor changes, only this changes.
func newUnregisteredEnv(t *testing.T, manifests string, drv *csifake.Driver, opts ...envOption) *testEnv {
	t.Helper()
	root := t.TempDir()
	c := loadManifests(t, manifests)
	trace := csiclient.NewTrace()
	cfg := Config{RootDir: root, NodeName: testNode, Cluster: c, Conn: drv, Trace: trace}
	for _, o := range opts {
		o(&cfg)
	}
	return &testEnv{t: t, root: root, drv: drv, cluster: c, trace: trace, k: New(cfg)}
}

func loadManifests(t *testing.T, input string) *manifests.Cluster {
	t.Helper()
	l := &manifests.Loader{Stdin: strings.NewReader(input), Warn: func(s string) { t.Logf("loader: %s", s) }}
	c, err := l.Load([]string{"-"})
	if err != nil {
		t.Fatalf("loading manifests: %v\n%s", err, input)
	}
	return c
}

func (e *testEnv) pod(name string) *corev1.Pod {
	e.t.Helper()
	for _, p := range e.cluster.Pods() {
		if p.Name == name {
			return p
		}
	}
	e.t.Fatalf("no pod %q", name)
	return nil
}

// mount mounts a pod's volumes and returns the result; an unresolved pod
// fails the test.
func (e *testEnv) mount(name string) *volumemanager.PodResult {
	e.t.Helper()
	res, err := e.k.vm.MountPod(context.Background(), e.pod(name), false)
	if err != nil {
		e.t.Fatalf("MountPod(%s): %v", name, err)
	}
	return res
}

// mountOK mounts and fails the test on any volume error.
func (e *testEnv) mountOK(name string) *volumemanager.PodResult {
	e.t.Helper()
	res := e.mount(name)
	for _, v := range res.Volumes {
		if v.Err != nil {
			e.t.Fatalf("MountPod(%s): volume %s: %v", name, v.PodVolume, v.Err)
		}
	}
	return res
}

func (e *testEnv) unmount(name string) []error {
	return e.k.vm.UnmountPod(context.Background(), e.pod(name), false)
}

func (e *testEnv) unmountOK(name string) {
	e.t.Helper()
	if errs := e.unmount(name); len(errs) > 0 {
		e.t.Fatalf("UnmountPod(%s): %v", name, errs)
	}
}

// steps returns the texts of the kubelet's steps in the trace: only the
// warnings with warnings set.
func (e *testEnv) steps(warnings bool) []string {
	var out []string
	for _, s := range e.trace.Steps() {
		if s.Warning || !warnings {
			out = append(out, s.Text)
		}
	}
	return out
}

// volErr returns the error of the pod's only volume result.
func volErr(t *testing.T, res *volumemanager.PodResult) *csiplugin.VolumeError {
	t.Helper()
	if len(res.Volumes) != 1 {
		t.Fatalf("want 1 volume result, got %d", len(res.Volumes))
	}
	err := res.Volumes[0].Err
	if err == nil {
		t.Fatalf("volume %s mounted, want an error", res.Volumes[0].PodVolume)
	}
	var ve *csiplugin.VolumeError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T is not a *VolumeError: %v", err, err)
	}
	return ve
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
