package csifake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

var (
	mountCap = &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	blockCap = &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	stageCap = csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
)

func newDriver() *Driver {
	return New(Config{
		Name: "fake.csi.example.com", VendorVersion: "1.0.0",
		NodeID: "node-1-id", MaxVolumesPerNode: 7, Topology: map[string]string{"zone": "a"},
		Capabilities: []csi.NodeServiceCapability_RPC_Type{stageCap, csi.NodeServiceCapability_RPC_GET_VOLUME_STATS},
	})
}

// The identity and node-info answers are the configured ones, and the
// configuration can change on a running driver.
func TestIdentityAnswers(t *testing.T) {
	d := newDriver()
	ctx := context.Background()
	id := csi.NewIdentityClient(d)
	node := csi.NewNodeClient(d)

	pi, err := id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || pi.GetName() != "fake.csi.example.com" || pi.GetVendorVersion() != "1.0.0" {
		t.Errorf("GetPluginInfo = %v, %v", pi, err)
	}
	ni, err := node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	want := &csi.NodeGetInfoResponse{NodeId: "node-1-id", MaxVolumesPerNode: 7, AccessibleTopology: &csi.Topology{Segments: map[string]string{"zone": "a"}}}
	if err != nil || !proto.Equal(ni, want) {
		t.Errorf("NodeGetInfo = %v, %v; want %v", ni, err, want)
	}
	nc, err := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	var got []csi.NodeServiceCapability_RPC_Type
	for _, c := range nc.GetCapabilities() {
		got = append(got, c.GetRpc().GetType())
	}
	if err != nil || !slices.Equal(got, []csi.NodeServiceCapability_RPC_Type{stageCap, csi.NodeServiceCapability_RPC_GET_VOLUME_STATS}) {
		t.Errorf("NodeGetCapabilities = %v, %v", got, err)
	}

	d.Update(func(c *Config) {
		c.Name, c.Topology, c.Capabilities = "renamed.example.com", nil, nil
		c.PluginCapabilities = []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE}
	})
	if pi, _ := id.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}); pi.GetName() != "renamed.example.com" {
		t.Errorf("name after Update = %q", pi.GetName())
	}
	if ni, _ := node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); ni.AccessibleTopology != nil {
		t.Errorf("topology after Update = %v, want none", ni.AccessibleTopology)
	}
	if nc, _ := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}); len(nc.GetCapabilities()) != 0 {
		t.Errorf("capabilities after Update = %v, want none", nc.GetCapabilities())
	}
	pc, err := id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil || len(pc.GetCapabilities()) != 1 || pc.GetCapabilities()[0].GetService().GetType() != csi.PluginCapability_Service_CONTROLLER_SERVICE {
		t.Errorf("GetPluginCapabilities = %v, %v", pc, err)
	}
	if _, err := id.Probe(ctx, &csi.ProbeRequest{}); err != nil {
		t.Errorf("Probe: %v", err)
	}
	if d.Config().Name != "renamed.example.com" {
		t.Errorf("Config().Name = %q", d.Config().Name)
	}
}

// Calls are recorded in order with their requests (copies), trace labels,
// answers and errors.
func TestRecording(t *testing.T) {
	d := newDriver()
	ctx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "kubelet", Operation: "MountDevice"})
	node := csi.NewNodeClient(d)
	req := &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: "/s", VolumeCapability: mountCap}
	if _, err := node.NodeStageVolume(ctx, req); err != nil {
		t.Fatal(err)
	}
	req.VolumeId = "changed after the call"
	_, _ = node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-1", TargetPath: "/t", VolumeCapability: mountCap})

	calls := d.Calls()
	if len(calls) != 2 || calls[0].Method != "NodeStageVolume" || calls[1].Method != "NodePublishVolume" {
		t.Fatalf("calls = %+v", calls)
	}
	if got := calls[0].Request.(*csi.NodeStageVolumeRequest).GetVolumeId(); got != "vol-1" {
		t.Errorf("recorded volume_id = %q, want the value at call time", got)
	}
	if calls[0].Labels.Operation != "MountDevice" || !calls[0].Done || calls[0].Err != nil || calls[0].Response == nil {
		t.Errorf("stage call = %+v", calls[0])
	}
	// Published without staging_target_path by a driver that staged it.
	if status.Code(calls[1].Err) != codes.FailedPrecondition || calls[1].Response != nil {
		t.Errorf("publish call err = %v, response %v; want FailedPrecondition", calls[1].Err, calls[1].Response)
	}
	if n := len(d.CallsOf("NodePublishVolume")); n != 1 {
		t.Errorf("CallsOf = %d", n)
	}
	d.ClearCalls()
	if len(d.Calls()) != 0 {
		t.Errorf("calls after ClearCalls")
	}
	if got := d.Staged(); got["vol-1"] != "/s" {
		t.Errorf("state lost with the calls: %v", got)
	}
}

// The required fields are InvalidArgument, as csi-sanity wants them.
func TestRequiredFields(t *testing.T) {
	d := newDriver()
	ctx := context.Background()
	n := csi.NewNodeClient(d)
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"stage without volume_id", func() error {
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{StagingTargetPath: "/s", VolumeCapability: mountCap})
			return err
		}},
		{"stage without staging_target_path", func() error {
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v", VolumeCapability: mountCap})
			return err
		}},
		{"stage without volume_capability", func() error {
			_, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: "/s"})
			return err
		}},
		{"unstage without staging_target_path", func() error {
			_, err := n.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "v"})
			return err
		}},
		{"publish without volume_id", func() error {
			_, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{TargetPath: "/t", VolumeCapability: mountCap})
			return err
		}},
		{"publish without target_path", func() error {
			_, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v", VolumeCapability: mountCap})
			return err
		}},
		{"publish without volume_capability", func() error {
			_, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t"})
			return err
		}},
		{"unpublish without target_path", func() error {
			_, err := n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "v"})
			return err
		}},
		{"stats without volume_path", func() error {
			_, err := n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "v"})
			return err
		}},
		{"expand without volume_id", func() error {
			_, err := n.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumePath: "/t"})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); status.Code(err) != codes.InvalidArgument {
				t.Errorf("error %v, want InvalidArgument", err)
			}
		})
	}
	if len(d.Staged()) != 0 || len(d.PublishedVolumes()) != 0 {
		t.Errorf("a rejected call changed the state: staged %v, published %v", d.Staged(), d.PublishedVolumes())
	}
}

// Stage, publish twice, unpublish, unstage: the state follows, the targets
// appear and go with ManageTargets, and a second stage elsewhere is refused.
func TestVolumeState(t *testing.T) {
	d := newDriver()
	d.Update(func(c *Config) { c.ManageTargets = true })
	ctx := context.Background()
	n := csi.NewNodeClient(d)
	dir := t.TempDir()
	staging, t1, t2 := dir+"/globalmount", dir+"/pods/a/mount", dir+"/pods/b/mount"

	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: staging, VolumeCapability: mountCap}))
	must(n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: staging, VolumeCapability: mountCap}))
	if _, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: dir + "/other", VolumeCapability: mountCap}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("stage at another path: %v, want FailedPrecondition", err)
	}
	if _, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-1", StagingTargetPath: dir + "/other", TargetPath: t1, VolumeCapability: mountCap}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("publish from a path not staged: %v, want FailedPrecondition", err)
	}
	must(n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-1", StagingTargetPath: staging, TargetPath: t1, VolumeCapability: mountCap}))
	must(n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-1", StagingTargetPath: staging, TargetPath: t2, VolumeCapability: mountCap}))
	if got := d.Published("vol-1"); !slices.Equal(got, []string{t1, t2}) {
		t.Errorf("Published = %q", got)
	}
	if fi, err := os.Stat(t1); err != nil || !fi.IsDir() {
		t.Errorf("target %s not made: %v", t1, err)
	}
	must(n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "vol-1", TargetPath: t1}))
	must(n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "vol-1", TargetPath: t1}))
	if _, err := os.Stat(t1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target %s left: %v", t1, err)
	}
	must(n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "vol-1", TargetPath: t2}))
	if got := d.PublishedVolumes(); len(got) != 0 {
		t.Errorf("PublishedVolumes = %q, want none", got)
	}
	// Published without its staging path while staged: refused.
	if _, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-1", TargetPath: t1, VolumeCapability: mountCap}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("publish of a staged volume without staging_target_path: %v, want FailedPrecondition", err)
	}
	must(n.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: staging}))
	if got := d.Staged(); len(got) != 0 {
		t.Errorf("Staged = %v, want none", got)
	}
	// An inline volume is never staged: no staging_target_path is fine.
	must(n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "csi-inline", TargetPath: t1, VolumeCapability: mountCap}))
	must(n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "csi-inline", TargetPath: t1}))

	// A block volume's target is a file; a Lenient driver publishes
	// without staging.
	d.Update(func(c *Config) { c.Lenient = true })
	blk := dir + "/publish/pv-1/pod-a"
	must(n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "vol-2", TargetPath: blk, VolumeCapability: blockCap}))
	if fi, err := os.Stat(blk); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("block target %s: %v, want a file", blk, err)
	}
}

// Stats and expansion answer from the request, or from a canned response.
func TestCannedResponses(t *testing.T) {
	d := newDriver()
	ctx := context.Background()
	n := csi.NewNodeClient(d)
	st, err := n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "v", VolumePath: "/t"})
	want := &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: 100, Used: 40, Available: 60}}}
	if err != nil || !proto.Equal(st, want) {
		t.Errorf("stats = %v, %v", st, err)
	}
	ex, err := n.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: "v", VolumePath: "/t", CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}})
	if err != nil || ex.GetCapacityBytes() != 2<<30 {
		t.Errorf("expand = %v, %v; want the required bytes", ex, err)
	}

	d.SetResponse("NodeGetVolumeStats", &csi.NodeGetVolumeStatsResponse{})
	st, err = n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "v", VolumePath: "/t"})
	if err != nil || st.GetUsage() != nil {
		t.Errorf("canned stats = %v, %v", st, err)
	}
	// A canned response does not skip the checks.
	if _, err := n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "v"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("canned stats without volume_path: %v", err)
	}
	d.SetResponse("NodeGetVolumeStats", nil)
	if st, _ := n.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "v", VolumePath: "/t"}); len(st.GetUsage()) != 1 {
		t.Errorf("stats after removing the canned response = %v", st)
	}

	// A method the fake does not implement answers Unimplemented, unless a
	// response is set for it.
	cc := csi.NewControllerClient(d)
	if _, err := cc.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("ControllerGetCapabilities: %v, want Unimplemented", err)
	}
	d.SetResponse("ControllerGetCapabilities", &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME}},
	}}})
	if r, err := cc.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{}); err != nil || len(r.GetCapabilities()) != 1 {
		t.Errorf("canned ControllerGetCapabilities = %v, %v", r, err)
	}
}

// Faults: a code for the next N calls, an ordered queue with successes in
// it, a sticky fault, a hang until the deadline, a function around the
// normal answer, and one that answers the wrong type.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	info := func(d *Driver) error {
		_, err := csi.NewNodeClient(d).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
		return err
	}
	codesOf := func(d *Driver, n int) []codes.Code {
		var out []codes.Code
		for range n {
			out = append(out, status.Code(info(d)))
		}
		return out
	}
	t.Run("FailNext", func(t *testing.T) {
		d := newDriver()
		d.FailNext("NodeGetInfo", codes.Unavailable, 2)
		want := []codes.Code{codes.Unavailable, codes.Unavailable, codes.OK}
		if got := codesOf(d, 3); !slices.Equal(got, want) {
			t.Errorf("codes = %v, want %v", got, want)
		}
		if msg := status.Convert(d.Calls()[0].Err).Message(); msg != "csifake: injected Unavailable" {
			t.Errorf("message = %q", msg)
		}
	})
	t.Run("Errors in order", func(t *testing.T) {
		d := newDriver()
		d.Errors("NodeGetInfo", nil, status.Error(codes.Internal, "x"), nil)
		want := []codes.Code{codes.OK, codes.Internal, codes.OK, codes.OK}
		if got := codesOf(d, 4); !slices.Equal(got, want) {
			t.Errorf("codes = %v, want %v", got, want)
		}
	})
	t.Run("sticky until cleared", func(t *testing.T) {
		d := newDriver()
		d.Inject("NodeGetInfo", Fault{Code: codes.NotFound, Message: "no node"})
		want := []codes.Code{codes.NotFound, codes.NotFound, codes.NotFound}
		if got := codesOf(d, 3); !slices.Equal(got, want) {
			t.Errorf("codes = %v, want %v", got, want)
		}
		d.ClearFaults("NodeGetInfo")
		if err := info(d); err != nil {
			t.Errorf("after ClearFaults: %v", err)
		}
	})
	t.Run("Times", func(t *testing.T) {
		d := newDriver()
		d.Inject("NodeGetInfo", Fault{Code: codes.Aborted, Times: 2})
		want := []codes.Code{codes.Aborted, codes.Aborted, codes.OK}
		if got := codesOf(d, 3); !slices.Equal(got, want) {
			t.Errorf("codes = %v, want %v", got, want)
		}
	})
	t.Run("hang until the deadline", func(t *testing.T) {
		d := newDriver()
		d.HangNext("NodeGetInfo", 1)
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		deadline, _ := cctx.Deadline()
		_, err := csi.NewNodeClient(d).NodeGetInfo(cctx, &csi.NodeGetInfoRequest{})
		if status.Code(err) != codes.DeadlineExceeded || time.Now().Before(deadline) {
			t.Errorf("hung call: %v at %v before the deadline; want DeadlineExceeded at the deadline", err, time.Until(deadline))
		}
		if err := info(d); err != nil {
			t.Errorf("next call: %v", err)
		}
	})
	t.Run("Func around the answer", func(t *testing.T) {
		d := newDriver()
		d.Inject("NodeGetInfo", Fault{Times: 1, Func: func(_ context.Context, _ proto.Message, answer Answer) (proto.Message, error) {
			resp, err := answer()
			resp.(*csi.NodeGetInfoResponse).NodeId = "patched"
			return resp, err
		}})
		r, err := csi.NewNodeClient(d).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
		if err != nil || r.GetNodeId() != "patched" || r.GetMaxVolumesPerNode() != 7 {
			t.Errorf("NodeGetInfo = %v, %v", r, err)
		}
	})
	t.Run("Func with the wrong type", func(t *testing.T) {
		d := newDriver()
		d.Inject("NodeGetInfo", Fault{Func: func(context.Context, proto.Message, Answer) (proto.Message, error) {
			return &csi.ProbeResponse{}, nil
		}})
		if err := info(d); status.Code(err) != codes.Internal {
			t.Errorf("wrong answer type: %v, want Internal", err)
		}
	})
}

// Observe sees each request as it arrives, before the answer.
func TestObserve(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "mount")
	d := New(Config{ManageTargets: true, Observe: func(_ context.Context, method string, req proto.Message) any {
		_, err := os.Stat(target)
		return method + ":" + map[bool]string{true: "present", false: "absent"}[err == nil]
	}})
	n := csi.NewNodeClient(d)
	_, _ = n.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: target, VolumeCapability: mountCap})
	_, _ = n.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: target, VolumeCapability: mountCap})
	var got []any
	for _, c := range d.Calls() {
		got = append(got, c.Observed)
	}
	if want := []any{"NodePublishVolume:absent", "NodePublishVolume:present"}; !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}

// The driver is safe for concurrent callers (run with -race).
func TestConcurrentCalls(t *testing.T) {
	d := newDriver()
	d.Update(func(c *Config) { c.Lenient = true })
	d.FailNext("NodePublishVolume", codes.Internal, 10)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = csi.NewNodeClient(d).NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
				VolumeId: "v", TargetPath: "/t/" + string(rune('a'+i)), VolumeCapability: mountCap,
			})
			d.Update(func(c *Config) { c.MaxVolumesPerNode++ })
			_ = d.Calls()
		}()
	}
	wg.Wait()
	failed := 0
	for _, c := range d.Calls() {
		if c.Err != nil {
			failed++
		}
	}
	if len(d.Calls()) != 20 || failed != 10 || len(d.Published("v")) != 10 {
		t.Errorf("%d calls, %d failed, %d published; want 20, 10, 10", len(d.Calls()), failed, len(d.Published("v")))
	}
}

// Over a socket the same driver answers, records and fails.
func TestServeOnSocket(t *testing.T) {
	d := newDriver()
	sock := ServeTest(t, d)
	conn := &csiclient.Dialer{Endpoint: csiclient.Endpoint(sock)}
	ctx := context.Background()
	pi, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || pi.GetName() != "fake.csi.example.com" {
		t.Fatalf("GetPluginInfo over the socket = %v, %v", pi, err)
	}
	d.FailNext("NodeStageVolume", codes.ResourceExhausted, 1)
	req := &csi.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: "/s", VolumeCapability: mountCap, Secrets: map[string]string{"k": "v"}}
	if _, err := csi.NewNodeClient(conn).NodeStageVolume(ctx, req); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("injected fault over the socket: %v", err)
	}
	if _, err := csi.NewNodeClient(conn).NodeStageVolume(ctx, req); err != nil {
		t.Errorf("stage over the socket: %v", err)
	}
	calls := d.Calls()
	if len(calls) != 3 || !proto.Equal(calls[2].Request, req) {
		t.Errorf("calls over the socket = %+v", calls)
	}
	if _, err := csi.NewControllerClient(conn).ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("ControllerGetCapabilities over the socket: %v", err)
	}
	if err := conn.Invoke(ctx, "/no.such.Service/Call", &csi.ProbeRequest{}, &csi.ProbeResponse{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("unknown service: %v", err)
	}
	if err := conn.Invoke(ctx, "/csi.v1.Node/NoSuchCall", &csi.ProbeRequest{}, &csi.ProbeResponse{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("unknown method: %v", err)
	}
}

// A call in flight when the calls are cleared is not recorded over a later
// call.
func TestClearCallsWhileInFlight(t *testing.T) {
	d := newDriver()
	entered, release := make(chan struct{}), make(chan struct{})
	d.Inject("NodeGetInfo", Fault{Times: 1, Func: func(_ context.Context, _ proto.Message, answer Answer) (proto.Message, error) {
		close(entered)
		<-release
		return nil, status.Error(codes.Aborted, "late")
	}})
	done := make(chan error)
	go func() {
		_, err := csi.NewNodeClient(d).NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
		done <- err
	}()
	<-entered
	d.ClearCalls()
	if _, err := csi.NewIdentityClient(d).GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; status.Code(err) != codes.Aborted {
		t.Fatalf("in-flight call: %v", err)
	}
	calls := d.Calls()
	if len(calls) != 1 || calls[0].Method != "GetPluginInfo" || calls[0].Err != nil || calls[0].Response == nil {
		t.Errorf("calls %+v, want GetPluginInfo answered", calls)
	}
}
