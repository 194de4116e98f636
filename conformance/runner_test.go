package conformance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// bugs are the ways the test driver goes wrong.
type bugs struct {
	remountOnPublish bool // a repeated NodePublishVolume unmounts and mounts again
	stackOnPublish   bool // a repeated NodePublishVolume mounts on top
	wipeOnPublish    bool // a repeated NodePublishVolume empties the volume
	keepTarget       bool // NodeUnpublishVolume unmounts but leaves the target
	noArgChecks      bool // no InvalidArgument for missing fields
	badTopology      bool // NodeGetInfo's topology key is no label key
	leaveMounted     bool // NodeUnpublishVolume returns OK and unmounts nothing
}

// testDriver is a small node-only driver on csifake with real bind mounts
// of a directory per volume, and switchable bugs: csifake answers identity,
// capabilities and node info and checks the arguments; publish and
// unpublish do the mounting.
type testDriver struct {
	data string
	bugs bugs
	mu   sync.Mutex
}

func mounted(p string) int {
	ms, _ := mountsAt(p)
	return len(ms)
}

// publish is NodePublishVolume: the fake's argument checks (unless the
// driver has none), then a bind mount, idempotent unless a bug says
// otherwise.
func (d *testDriver) publish(_ context.Context, m proto.Message, answer csifake.Answer) (proto.Message, error) {
	req := m.(*csi.NodePublishVolumeRequest)
	if !d.bugs.noArgChecks {
		if _, err := answer(); err != nil {
			return nil, err
		}
	}
	if req.GetTargetPath() == "" {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	target := req.GetTargetPath()
	backing := filepath.Join(d.data, strings.ReplaceAll(req.GetVolumeId(), "/", "_"))
	if err := os.MkdirAll(backing, 0o777); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if mounted(target) > 0 {
		switch {
		case d.bugs.wipeOnPublish:
			entries, _ := os.ReadDir(target)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(target, e.Name()))
			}
			return &csi.NodePublishVolumeResponse{}, nil
		case d.bugs.remountOnPublish:
			if err := unix.Unmount(target, 0); err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
		case d.bugs.stackOnPublish:
		default:
			return &csi.NodePublishVolumeResponse{}, nil
		}
	}
	if err := unix.Mount(backing, target, "", unix.MS_BIND, ""); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// unpublish is NodeUnpublishVolume: unmount until nothing is mounted, then
// remove the target, unless a bug says otherwise.
func (d *testDriver) unpublish(_ context.Context, m proto.Message, answer csifake.Answer) (proto.Message, error) {
	req := m.(*csi.NodeUnpublishVolumeRequest)
	if !d.bugs.noArgChecks {
		if _, err := answer(); err != nil {
			return nil, err
		}
	}
	if d.bugs.leaveMounted || req.GetTargetPath() == "" {
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for mounted(req.GetTargetPath()) > 0 {
		if err := unix.Unmount(req.GetTargetPath(), 0); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	if !d.bugs.keepTarget {
		if err := os.Remove(req.GetTargetPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// startTestDriver serves a test driver on a socket in a short temp dir.
func startTestDriver(t *testing.T, b bugs) (*testDriver, csiclient.Endpoint, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for bind mounts")
	}
	dir, err := os.MkdirTemp("", "conf-test-")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	t.Cleanup(func() {
		if left := detachUnder(dir); len(left) > 0 {
			t.Errorf("still mounted: %v", left)
			return
		}
		_ = os.RemoveAll(dir)
	})
	d := &testDriver{data: filepath.Join(dir, "data"), bugs: b}
	cfg := csifake.Config{Name: "test.csi.example.com", VendorVersion: "0.0.1", NodeID: "node-1"}
	if b.badTopology {
		cfg.Topology = map[string]string{"bad key/with/slashes": "zone-a"}
	}
	fake := csifake.New(cfg)
	fake.Inject("NodePublishVolume", csifake.Fault{Func: d.publish})
	fake.Inject("NodeUnpublishVolume", csifake.Fault{Func: d.unpublish})
	sock := csifake.ServeTest(t, fake)
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o750); err != nil {
		t.Fatal(err)
	}
	return d, csiclient.Endpoint(sock), root
}

// runAgainst runs the scenarios matching focus against a test driver whose
// CSIDriver requires republish.
func runAgainst(t *testing.T, b bugs, focus string) map[string]Result {
	t.Helper()
	_, ep, root := startTestDriver(t, b)
	conn := &csiclient.Dialer{Endpoint: ep}
	probe := csiclient.NewTrace()
	ctx := context.Background()
	info, err := Probe(ctx, &csiclient.Recorder{Next: conn, Trace: probe}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	obj := csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.AttachRequired = ptr(false)
		s.RequiresRepublish = ptr(true)
	})
	obj.Name = info.Name
	rep := Run(ctx, Config{
		Conn: conn, CSIDriver: obj, Focus: regexp.MustCompile(focus),
		Timeout: 20 * time.Second, Release: node.DefaultRelease(), RootDir: root, NodeName: "node-1",
	}, info, probe)
	out := map[string]Result{}
	for _, r := range rep.Results {
		out[r.Name] = r
	}
	if rep.Volume != nil && (rep.Volume.Handle != DefaultVolumeHandle || rep.Volume.Created) {
		t.Errorf("volume %+v, want the default pre-provisioned handle", rep.Volume)
	}
	if ms, _ := mountsUnder(root); len(ms) > 0 {
		t.Errorf("left mounted under the root dir: %v", ms)
	}
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		t.Errorf("left in the root dir: %v", entries)
	}
	return out
}

func wantResult(t *testing.T, got map[string]Result, name string, status Status, contains ...string) {
	t.Helper()
	r, ok := got[name]
	if !ok {
		t.Errorf("%s: no result", name)
		return
	}
	t.Logf("%s: %s: %s", name, r.Status, r.Message)
	if r.Status != status {
		t.Errorf("%s: %s (%s), want %s", name, r.Status, r.Message, status)
		return
	}
	for _, c := range contains {
		if !strings.Contains(r.Message, c) {
			t.Errorf("%s: message %q does not contain %q", name, r.Message, c)
		}
	}
}

func TestRunCorrectDriver(t *testing.T) {
	got := runAgainst(t, bugs{}, ".")
	for name, r := range got {
		if r.Status == Fail {
			t.Errorf("%s failed: %s", name, r.Message)
		}
	}
	wantResult(t, got, "republish/same-mount", Pass)
	wantResult(t, got, "node/stage-idempotent", Skip, "STAGE_UNSTAGE_VOLUME")
	if n := len(got["republish/same-mount"].Notes); n == 0 {
		t.Errorf("republish: no notes")
	}
}

func TestRunRemountOnRepublish(t *testing.T) {
	got := runAgainst(t, bugs{remountOnPublish: true}, "republish|publish-idempotent")
	wantResult(t, got, "republish/same-mount", Fail,
		"NodePublishVolume (republish) unmounted and remounted the target: mount ID ",
		"the kubelet republishes over a live mount and the pod keeps the old one (docs/kubelet.md §5)")
	wantResult(t, got, "node/publish-idempotent", Fail, "NodePublishVolume repeated replaced the mount", "(docs/kubelet.md §12)")
}

func TestRunStackOnRepublish(t *testing.T) {
	got := runAgainst(t, bugs{stackOnPublish: true}, "republish|publish-idempotent")
	wantResult(t, got, "republish/same-mount", Fail, "stacked a new mount on the live target", "(docs/kubelet.md §5)")
	wantResult(t, got, "node/publish-idempotent", Fail, "stacked a second mount", "(docs/kubelet.md §12)")
}

func TestRunWipeOnRepublish(t *testing.T) {
	got := runAgainst(t, bugs{wipeOnPublish: true}, "republish")
	wantResult(t, got, "republish/same-mount", Fail, "the file written into the target before the republish is gone after it", "(docs/kubelet.md §5)")
}

func TestRunUnpublishKeepsTarget(t *testing.T) {
	got := runAgainst(t, bugs{keepTarget: true}, "unpublish|lifecycle")
	wantResult(t, got, "node/unpublish-removes-target", Fail, "NodeUnpublishVolume returned OK but the target", "is a directory, not mounted", "(docs/kubelet.md §1.7)")
	// The kubelet removes an empty, unmounted target itself: nothing is
	// left, the lifecycle passes.
	wantResult(t, got, "lifecycle/persistent", Pass)
	wantResult(t, got, "node/unpublish-idempotent", Pass)
}

func TestRunNoArgumentChecks(t *testing.T) {
	got := runAgainst(t, bugs{noArgChecks: true}, "invalid-argument")
	wantResult(t, got, "node/invalid-argument/NodePublishVolume", Fail,
		"NodePublishVolume without volume_id returned OK, want InvalidArgument",
		"NodePublishVolume without target_path returned OK",
		"NodePublishVolume without volume_capability returned OK")
	wantResult(t, got, "node/invalid-argument/NodeUnpublishVolume", Fail, "NodeUnpublishVolume without volume_id returned OK")
	wantResult(t, got, "node/invalid-argument/NodeStageVolume", Skip, "STAGE_UNSTAGE_VOLUME")
}

func TestRunBadTopology(t *testing.T) {
	got := runAgainst(t, bugs{badTopology: true}, "registration")
	wantResult(t, got, "registration/node-info", Fail, `topology key "bad key/with/slashes", which is not a valid label key`, "(docs/kubelet.md §13)")
}

func TestRunLeftMounted(t *testing.T) {
	got := runAgainst(t, bugs{leaveMounted: true}, "lifecycle/persistent")
	wantResult(t, got, "lifecycle/persistent", Fail, "still mounted: <root>/pods/", "/volumes/kubernetes.io~csi/conformance-pv/mount", "(docs/kubelet.md §1.7)")
}
