package node

import (
	"context"
	"errors"
	"fmt"
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
		g, _ := NewFeatureGates(Version{Minor: minor}, "")
		c.Release = Release{Version: Version{Minor: minor}, Gates: g}
	}
}

// withGates sets the release and feature gates over its defaults.
func withGates(t *testing.T, minor int, gates string) envOption {
	g, err := NewFeatureGates(Version{Minor: minor}, gates)
	if err != nil {
		t.Fatalf("gates %q at 1.%d: %v", gates, minor, err)
	}
	return func(c *Config) { c.Release = Release{Version: Version{Minor: minor}, Gates: g} }
}

// newEnv loads the manifests, starts a kubelet and registers the driver;
// the registration calls are forgotten.
func newEnv(t *testing.T, manifests string, drv *csifake.Driver, opts ...envOption) *testEnv {
	t.Helper()
	e := newUnregisteredEnv(t, manifests, drv, opts...)
	if _, err := e.k.register(context.Background()); err != nil {
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
func (e *testEnv) mount(name string) *PodResult {
	e.t.Helper()
	res, err := e.k.mountPod(context.Background(), e.pod(name), false)
	if err != nil {
		e.t.Fatalf("MountPod(%s): %v", name, err)
	}
	return res
}

// mountOK mounts and fails the test on any volume error.
func (e *testEnv) mountOK(name string) *PodResult {
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
	return e.k.unmountPod(context.Background(), e.pod(name), false)
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
func volErr(t *testing.T, res *PodResult) *VolumeError {
	t.Helper()
	if len(res.Volumes) != 1 {
		t.Fatalf("want 1 volume result, got %d", len(res.Volumes))
	}
	err := res.Volumes[0].Err
	if err == nil {
		t.Fatalf("volume %s mounted, want an error", res.Volumes[0].PodVolume)
	}
	var ve *VolumeError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T is not a *VolumeError: %v", err, err)
	}
	return ve
}

// ---- manifests ----

// docs joins YAML documents.
func docs(ds ...string) string { return strings.Join(ds, "\n---\n") }

// csiDriverDoc is a CSIDriver for testDriver with the given spec lines
// (indented by two spaces, e.g. "attachRequired: false").
func csiDriverDoc(spec ...string) string {
	s := "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: " + testDriver + "\nspec:"
	if len(spec) == 0 {
		return s + " {}"
	}
	for _, l := range spec {
		s += "\n  " + l
	}
	return s
}

// noAttachDriver is the CSIDriver most tests use: no attach, no pod info.
var noAttachDriver = csiDriverDoc("attachRequired: false")

// pvDoc is a CSI PV bound to claim default/<claim>; extra lines go under
// spec. An extra line starting with "csi:" replaces the default csi source,
// one with "accessModes:" the default [ReadWriteOnce].
func pvDoc(name, handle, claim string, extra ...string) string {
	s := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity: {storage: 1Gi}
  claimRef: {namespace: default, name: %s}`, name, claim)
	hasCSI, hasModes := false, false
	for _, l := range extra {
		hasCSI = hasCSI || strings.HasPrefix(l, "csi:")
		hasModes = hasModes || strings.HasPrefix(l, "accessModes:")
		s += "\n  " + l
	}
	if !hasCSI {
		s += fmt.Sprintf("\n  csi: {driver: %s, volumeHandle: %s}", testDriver, handle)
	}
	if !hasModes {
		s += "\n  accessModes: [ReadWriteOnce]"
	}
	return s
}

func pvcDoc(name, volumeName string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  volumeName: %s`, name, volumeName)
}

// podDoc is a pod in namespace default whose one container mounts every
// volume (an unused volume is skipped: docs/kubelet.md §11); volumes are
// YAML flow mappings "{name: N, ...}".
func podDoc(name, uid string, volumes ...string) string {
	s := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
  uid: %s
spec:
  serviceAccountName: app-sa
  nodeName: node-1
  containers:
  - name: app
    image: busybox
    volumeMounts:`, name, uid)
	if len(volumes) == 0 {
		return s + " []\n  volumes: []"
	}
	for _, v := range volumes {
		s += fmt.Sprintf("\n    - {name: %s, mountPath: /mnt/%s}", volName(v), volName(v))
	}
	s += "\n  volumes:"
	for _, v := range volumes {
		s += "\n  - " + v
	}
	return s
}

// blockPodDoc is podDoc with the volumes as raw block devices
// (volumeDevices), as a pod of a volumeMode Block claim has them.
func blockPodDoc(name, uid string, volumes ...string) string {
	s := podDoc(name, uid, volumes...)
	s = strings.Replace(s, "volumeMounts:", "volumeDevices:", 1)
	for _, v := range volumes {
		s = strings.Replace(s, "mountPath: /mnt/"+volName(v), "devicePath: /dev/"+volName(v), 1)
	}
	return s
}

// volName is the name of a volume written as "{name: N, ...}".
func volName(v string) string {
	n, _, _ := strings.Cut(strings.TrimPrefix(v, "{name: "), ",")
	return n
}

func claimVol(name, claim string) string {
	return fmt.Sprintf("{name: %s, persistentVolumeClaim: {claimName: %s}}", name, claim)
}

func inlineVol(name string, csiFields string) string {
	if csiFields != "" {
		csiFields = ", " + csiFields
	}
	return fmt.Sprintf("{name: %s, csi: {driver: %s%s}}", name, testDriver, csiFields)
}

// vaDoc is the VolumeAttachment of handle on node-1, by its literal name.
func vaDoc(name, pv string, attached bool, status ...string) string {
	s := fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata:
  name: %s
spec:
  attacher: %s
  nodeName: node-1
  source: {persistentVolumeName: %s}
status:
  attached: %t`, name, testDriver, pv, attached)
	for _, l := range status {
		s += "\n  " + l
	}
	return s
}

// The standard objects: PV pv-1 (handle vol-1) bound to claim data-1, used
// by pod app-1 (uid pod-uid-1) as volume "data".
var (
	pv1  = pvDoc("pv-1", "vol-1", "data-1")
	pvc1 = pvcDoc("data-1", "pv-1")
	pod1 = podDoc("app-1", "pod-uid-1", claimVol("data", "data-1"))
	// blockPod1 is pod1 with "data" in volumeDevices.
	blockPod1 = blockPodDoc("app-1", "pod-uid-1", claimVol("data", "data-1"))
	capStage  = csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	capSNMW   = csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER
	capVMG    = csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP
)

// Literal kubelet facts for the standard objects (docs/kubelet.md §1.3, §10, §2),
// computed by hand with python3 hashlib.sha256.
const (
	// hex(sha256("vol-1"))
	sha256Vol1 = "d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49"
	// "csi-" + hex(sha256("vol-1" + "hostpath.csi.k8s.io" + "node-1"))
	attachmentVol1 = "csi-a5a2e67339ab5660a390dc86be397e784322823ff01f40cf2c01a72c3cab1374"
	// "csi-" + hex(sha256("pod-uid-1" + "scratch"))
	inlineHandlePod1Scratch = "csi-c5699e390261e9e6987cb40a451a4e699b550c7b5f2b6574fc12407e6f10fb2f"
)

// Paths of the standard objects under root, written out (docs/kubelet.md §1.2, §1.3).
func targetPV1(root string) string {
	return root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1/mount"
}

func globalmountVol1(root string) string {
	return root + "/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/" + sha256Vol1 + "/globalmount"
}
