package csiclient

import (
	"context"
	"errors"
	"strings"
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
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
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

// beginCollect is a sink that also hears when calls start.
type beginCollect struct {
	collect
	begins []Call
	events []string
}

func (c *beginCollect) Begin(x Call) {
	c.begins = append(c.begins, x)
	c.events = append(c.events, "begin "+x.Method)
}
func (c *beginCollect) Call(x Call) {
	c.collect.Call(x)
	c.events = append(c.events, "call "+x.Method)
}

// A streaming trace keeps nothing, yet numbers the calls and hands every
// call and step to its sinks; a BeginSink hears each call start first,
// with the start time the finished call carries.
func TestStreamingTrace(t *testing.T) {
	sink := &beginCollect{}
	tr := NewStreamingTrace(sink)
	tr.now = (&fakeClock{t: t0, step: time.Millisecond}).now
	r := &Recorder{Next: &Planned{}, Trace: tr}
	ctx := WithLabels(context.Background(), Labels{Component: "kubelet", Operation: "SetUp", Volume: "pv-1", Pod: "default/app"})
	for range 3 {
		if _, err := csi.NewNodeClient(r).NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t"}); err != nil {
			t.Fatal(err)
		}
	}
	tr.Note(ctx, false, "a step")
	if tr.Calls() != nil || tr.Steps() != nil {
		t.Errorf("streaming trace kept %d calls, %d steps; want none", len(tr.Calls()), len(tr.Steps()))
	}
	if len(sink.calls) != 3 || len(sink.steps) != 1 {
		t.Fatalf("sink got %d calls, %d steps; want 3, 1", len(sink.calls), len(sink.steps))
	}
	for i, c := range sink.calls {
		if c.Seq != i+1 {
			t.Errorf("call %d has Seq %d", i+1, c.Seq)
		}
		b := sink.begins[i]
		if !b.Start.Equal(c.Start) || b.Method != "NodePublishVolume" || b.Labels != c.Labels {
			t.Errorf("begin %d = %+v, call = %+v", i+1, b, c)
		}
	}
	want := "begin NodePublishVolume,call NodePublishVolume,begin NodePublishVolume,call NodePublishVolume,begin NodePublishVolume,call NodePublishVolume"
	if got := strings.Join(sink.events, ","); got != want {
		t.Errorf("events = %s\nwant %s", got, want)
	}
}

// NewTrace keeps calls as before, and a plain sink is not asked about
// starts.
func TestTraceKeepsByDefault(t *testing.T) {
	tr := NewTrace(&collect{})
	r := &Recorder{Next: &Planned{}, Trace: tr}
	_, _ = csi.NewNodeClient(r).NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	_, _ = csi.NewNodeClient(r).NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	if calls := tr.Calls(); len(calls) != 2 || calls[1].Seq != 2 {
		t.Errorf("calls = %+v, want 2 kept", calls)
	}
	if tr.begins.Load() {
		t.Errorf("a trace without a BeginSink takes the begin lock")
	}
}
