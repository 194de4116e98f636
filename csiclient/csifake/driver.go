// Package csifake is a fake CSI driver for tests, in the spirit of the
// kubelet's pkg/volume/csi/fake: it records every request in order, answers
// from what the test programs (identity, node info, capabilities, canned
// responses), keeps the staged and published volumes and checks the fields a
// driver must reject when missing, and injects faults per method (a gRPC
// code for the next calls, a hang until the caller gives up, a function of
// the test's own).
//
// A *Driver is a grpc.ClientConnInterface, so a kubelet under test calls it
// in-process, with no socket and no root; Serve puts the same driver on a
// unix socket for the tests that need a real endpoint. It is safe for
// concurrent use.
package csifake

import (
	"context"
	"fmt"
	"maps"
	"path"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// Config is what the driver says of itself and how it behaves. Change it
// on a running driver with Update.
type Config struct {
	Name          string // GetPluginInfo
	VendorVersion string

	NodeID            string // NodeGetInfo
	MaxVolumesPerNode int64
	Topology          map[string]string // nil: no accessible_topology

	// Capabilities are NodeGetCapabilities' RPC capabilities, in order.
	Capabilities []csi.NodeServiceCapability_RPC_Type
	// PluginCapabilities are GetPluginCapabilities' services.
	PluginCapabilities []csi.PluginCapability_Service_Type

	// ManageTargets makes the driver create target_path on
	// NodePublishVolume (a directory, or an empty file for a block volume)
	// and remove it on NodeUnpublishVolume, as a driver that mounts does;
	// nothing is mounted.
	ManageTargets bool

	// Lenient turns off the state checks (publishing a volume the driver
	// did not stage at staging_target_path when it has
	// STAGE_UNSTAGE_VOLUME); the required-field checks stay.
	Lenient bool

	// Observe, when set, is called as each request arrives, before any
	// answer; its result is kept as the call's Observed (for a test that
	// wants to know what was on disk when the driver was called).
	Observe func(ctx context.Context, method string, req proto.Message) any
}

// Call is one request the driver received.
type Call struct {
	Method string // short name: NodePublishVolume
	// Labels are the trace labels the caller put on the context
	// (csiclient.WithLabels); empty for calls that came over a socket.
	Labels   csiclient.Labels
	Request  proto.Message
	Response proto.Message // nil when the call failed or is still running
	Err      error
	Done     bool // the driver has answered
	Observed any  // what Config.Observe returned
}

// Answer runs the driver's normal handling of the request being served.
type Answer func() (proto.Message, error)

// Fault is what the driver does instead of (or around) its normal answer
// for the calls of one method. The first field set wins, in this order:
// Func, Hang, Err, Code. A Fault with none set answers normally, which is
// how a queue of faults leaves a call alone.
type Fault struct {
	// Func answers in place of the driver; answer runs the normal
	// handling, so a Func can also act before or after it.
	Func func(ctx context.Context, req proto.Message, answer Answer) (proto.Message, error)
	// Hang blocks until the caller's context is done, then fails as gRPC
	// reports a context error (DeadlineExceeded or Canceled).
	Hang bool
	Err  error // returned as is
	Code codes.Code
	// Message is the status message with Code; default "csifake: injected <code>".
	Message string
	// Times is how many calls the fault applies to; 0: every call until
	// ClearFaults (later faults of the method are then never reached).
	Times int
}

// Driver is the fake driver. The zero value is not usable: call New.
type Driver struct {
	mu        sync.Mutex
	cfg       Config
	calls     []Call
	gen       int // counts ClearCalls, so that a call in flight across one is not misfiled
	faults    map[string][]Fault
	responses map[string]proto.Message
	staged    map[string]string            // volume_id -> staging_target_path
	published map[string]map[string]string // volume_id -> target_path -> staging_target_path
}

var _ grpc.ClientConnInterface = (*Driver)(nil)

// New returns a driver with cfg.
func New(cfg Config) *Driver {
	return &Driver{
		cfg:       cloneConfig(cfg),
		faults:    map[string][]Fault{},
		responses: map[string]proto.Message{},
		staged:    map[string]string{},
		published: map[string]map[string]string{},
	}
}

func cloneConfig(c Config) Config {
	c.Topology = maps.Clone(c.Topology)
	c.Capabilities = append([]csi.NodeServiceCapability_RPC_Type(nil), c.Capabilities...)
	c.PluginCapabilities = append([]csi.PluginCapability_Service_Type(nil), c.PluginCapabilities...)
	return c
}

// Update changes the configuration of a running driver.
func (d *Driver) Update(change func(*Config)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := cloneConfig(d.cfg)
	change(&c)
	d.cfg = cloneConfig(c)
}

// Config returns a copy of the current configuration.
func (d *Driver) Config() Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return cloneConfig(d.cfg)
}

// SetResponse makes every successful call of method answer resp (a copy),
// in place of the answer built from the configuration; nil removes it.
// State is still kept and checked.
func (d *Driver) SetResponse(method string, resp proto.Message) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if resp == nil {
		delete(d.responses, method)
		return
	}
	d.responses[method] = proto.Clone(resp)
}

// Inject queues a fault for the calls of method (short name).
func (d *Driver) Inject(method string, f Fault) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults[method] = append(d.faults[method], f)
}

// FailNext makes the next n calls of method fail with code.
func (d *Driver) FailNext(method string, code codes.Code, n int) {
	for range n {
		d.Inject(method, Fault{Code: code, Times: 1})
	}
}

// HangNext makes the next n calls of method hang until the caller's
// context is done.
func (d *Driver) HangNext(method string, n int) {
	for range n {
		d.Inject(method, Fault{Hang: true, Times: 1})
	}
}

// Errors queues the answers of the next calls of method, in order: a nil
// entry answers normally.
func (d *Driver) Errors(method string, errs ...error) {
	for _, err := range errs {
		d.Inject(method, Fault{Err: err, Times: 1})
	}
}

// ClearFaults drops every fault queued for method.
func (d *Driver) ClearFaults(method string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.faults, method)
}

// Calls returns the calls received so far, in order of arrival.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call(nil), d.calls...)
}

// CallsOf returns the calls of one method.
func (d *Driver) CallsOf(method string) []Call {
	var out []Call
	for _, c := range d.Calls() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// ClearCalls forgets the calls received so far; state and faults stay.
func (d *Driver) ClearCalls() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = nil
	d.gen++
}

// Invoke serves one unary call.
func (d *Driver) Invoke(ctx context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	short := path.Base(method)
	req, ok := args.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "csifake: %s request %T is not a proto message", short, args)
	}
	out, ok := reply.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "csifake: %s reply %T is not a proto message", short, reply)
	}
	at, observe := d.arrive(ctx, short, req)
	if observe != nil {
		d.setObserved(at, observe(ctx, short, req))
	}
	resp, err := d.serve(ctx, short, req, d.nextFault(short))
	if err == nil && resp != nil && resp.ProtoReflect().Descriptor() != out.ProtoReflect().Descriptor() {
		err = status.Errorf(codes.Internal, "csifake: %s answered %T, want %T", short, resp, reply)
	}
	if err == nil && resp != nil {
		proto.Reset(out)
		proto.Merge(out, resp)
	}
	d.finish(at, resp, err)
	return err
}

// NewStream: no CSI call streams.
func (d *Driver) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "csifake: no streaming calls")
}

// slot is where a call in flight is recorded: its index among the calls
// of one generation (between two ClearCalls).
type slot struct{ gen, i int }

// arrive records the request and returns its slot and the observer.
func (d *Driver) arrive(ctx context.Context, method string, req proto.Message) (slot, func(context.Context, string, proto.Message) any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, Call{Method: method, Labels: csiclient.LabelsFrom(ctx), Request: proto.Clone(req)})
	return slot{d.gen, len(d.calls) - 1}, d.cfg.Observe
}

// record returns the call in slot s, nil when a ClearCalls dropped it.
func (d *Driver) record(s slot) *Call {
	if s.gen != d.gen || s.i >= len(d.calls) {
		return nil
	}
	return &d.calls[s.i]
}

func (d *Driver) setObserved(s slot, v any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.record(s); c != nil {
		c.Observed = v
	}
}

// finish records the answer; a ClearCalls in between drops it.
func (d *Driver) finish(s slot, resp proto.Message, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.record(s)
	if c == nil {
		return
	}
	c.Done, c.Err = true, err
	if err == nil && resp != nil {
		c.Response = proto.Clone(resp)
	}
}

// nextFault takes the fault that applies to this call of method.
func (d *Driver) nextFault(method string) Fault {
	d.mu.Lock()
	defer d.mu.Unlock()
	q := d.faults[method]
	if len(q) == 0 {
		return Fault{}
	}
	f := q[0]
	if f.Times == 1 {
		d.faults[method] = q[1:]
	} else if f.Times > 1 {
		q[0].Times--
	}
	return f
}

// serve applies the fault around the normal answer. No lock is held while
// a call hangs or a test's function runs.
func (d *Driver) serve(ctx context.Context, method string, req proto.Message, f Fault) (proto.Message, error) {
	answer := func() (proto.Message, error) { return d.answer(method, req) }
	switch {
	case f.Func != nil:
		return f.Func(ctx, req, answer)
	case f.Hang:
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	case f.Err != nil:
		return nil, f.Err
	case f.Code != codes.OK:
		msg := f.Message
		if msg == "" {
			msg = fmt.Sprintf("csifake: injected %s", f.Code)
		}
		return nil, status.Error(f.Code, msg)
	}
	return answer()
}
