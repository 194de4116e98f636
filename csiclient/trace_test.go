package csiclient

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	t := c.t
	c.t = c.t.Add(c.step)
	return t
}

type failingConn struct{ err error }

func (f failingConn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	return f.err
}
func (f failingConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, f.err
}

type collect struct {
	calls []Call
	steps []Step
}

func (c *collect) Call(x Call) { c.calls = append(c.calls, x) }
func (c *collect) Step(x Step) { c.steps = append(c.steps, x) }

var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// The Recorder keeps method, request, response, code, duration and labels
// of every call, successful or not.
func TestRecorder(t *testing.T) {
	sink := &collect{}
	tr := NewTrace(sink)
	tr.now = (&fakeClock{t: t0, step: 5 * time.Millisecond}).now
	ok := &Recorder{Next: &Planned{Capabilities: []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}, Trace: tr}
	bad := &Recorder{Next: failingConn{status.Error(codes.Unavailable, "down")}, Trace: tr}

	ctx := WithLabels(context.Background(), Labels{Component: "kubelet", Operation: "SetUp", Volume: "pv-1", Pod: "default/app-1"})
	ctx = WithAsking(ctx, "STAGE_UNSTAGE_VOLUME")
	if _, err := csi.NewNodeClient(ok).NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}); err != nil {
		t.Fatal(err)
	}
	req := &csi.NodePublishVolumeRequest{VolumeId: "vol-1", TargetPath: "/t"}
	_, err := csi.NewNodeClient(bad).NodePublishVolume(WithLabels(context.Background(), Labels{Component: "kubelet", Operation: "SetUp"}), req)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("error = %v", err)
	}
	req.VolumeId = "changed after the call"

	calls := tr.Calls()
	if len(calls) != 2 || len(sink.calls) != 2 {
		t.Fatalf("calls = %d, sink %d; want 2", len(calls), len(sink.calls))
	}
	c := calls[0]
	wantLabels := Labels{Component: "kubelet", Operation: "SetUp", Volume: "pv-1", Pod: "default/app-1", Asking: "STAGE_UNSTAGE_VOLUME"}
	if c.Seq != 1 || c.Method != "NodeGetCapabilities" || c.Labels != wantLabels || c.Code != codes.OK || c.Err != nil {
		t.Errorf("call 1 = %+v", c)
	}
	if !c.Start.Equal(t0) || c.Duration != 5*time.Millisecond {
		t.Errorf("call 1 start %v duration %v; want %v, 5ms", c.Start, c.Duration, t0)
	}
	if r, _ := c.Response.(*csi.NodeGetCapabilitiesResponse); len(r.GetCapabilities()) != 1 {
		t.Errorf("call 1 response = %v", c.Response)
	}
	c = calls[1]
	if c.Seq != 2 || c.Method != "NodePublishVolume" || c.Code != codes.Unavailable || c.Response != nil || c.Err == nil {
		t.Errorf("call 2 = %+v", c)
	}
	if !proto.Equal(c.Request, &csi.NodePublishVolumeRequest{VolumeId: "vol-1", TargetPath: "/t"}) {
		t.Errorf("recorded request = %v, want a copy taken at call time", c.Request)
	}
	// Calls returns a copy.
	calls[0].Method = "x"
	if tr.Calls()[0].Method != "NodeGetCapabilities" {
		t.Errorf("Calls() is not a copy")
	}
}

func TestTraceSteps(t *testing.T) {
	sink := &collect{}
	tr := NewTrace()
	tr.AddSink(sink)
	tr.now = func() time.Time { return t0 }
	ctx := WithLabels(context.Background(), Labels{Component: "kubelet", Operation: "MountDevice"})
	tr.Note(ctx, true, "mkdir /g (0750)")
	tr.Warn(ctx, "careful")
	want := []Step{
		{Time: t0, Labels: Labels{Component: "kubelet", Operation: "MountDevice"}, Text: "mkdir /g (0750)", Verbose: true},
		{Time: t0, Labels: Labels{Component: "kubelet", Operation: "MountDevice"}, Text: "careful", Warning: true},
	}
	got := tr.Steps()
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] || len(sink.steps) != 2 {
		t.Errorf("steps = %+v, want %+v", got, want)
	}
	if LabelsFrom(context.Background()) != (Labels{}) {
		t.Errorf("labels of a bare context")
	}
}

func TestRecorderNonStatusError(t *testing.T) {
	tr := NewTrace()
	r := &Recorder{Next: failingConn{errors.New("dial unix /x: connect: no such file")}, Trace: tr}
	_, _ = csi.NewNodeClient(r).NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	if c := tr.Calls()[0]; c.Code != codes.Unknown || c.Err == nil {
		t.Errorf("call = %+v, want code Unknown", c)
	}
}

// hangingConn answers only when the call's context ends, as a driver that
// never answers does through gRPC.
type hangingConn struct{}

func (hangingConn) Invoke(ctx context.Context, _ string, _, _ any, _ ...grpc.CallOption) error {
	<-ctx.Done()
	return status.FromContextError(ctx.Err()).Err()
}
func (hangingConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, errors.New("no streams")
}

// A call cut off by the operation's timeout is marked TimedOut; a driver
// that itself answers DeadlineExceeded in time is not.
func TestRecorderTimedOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		conn grpc.ClientConnInterface
		want bool
	}{
		{"no answer before the deadline", hangingConn{}, true},
		{"the driver answers DeadlineExceeded", failingConn{status.Error(codes.DeadlineExceeded, "backend slow")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trace := NewTrace()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			r := &Recorder{Next: tc.conn, Trace: trace}
			err := r.Invoke(ctx, "/csi.v1.Node/NodeStageVolume", &csi.NodeStageVolumeRequest{}, &csi.NodeStageVolumeResponse{})
			if status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("err = %v, want DeadlineExceeded", err)
			}
			calls := trace.Calls()
			if len(calls) != 1 || calls[0].TimedOut != tc.want {
				t.Errorf("TimedOut = %v, want %v", calls[0].TimedOut, tc.want)
			}
			if rec := (Redactor{}).Record(calls[0]); rec.TimedOut != tc.want {
				t.Errorf("JSON timed_out = %v, want %v", rec.TimedOut, tc.want)
			}
		})
	}
}
