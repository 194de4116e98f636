package csiclient

import (
	"context"
	"errors"
	"path"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Labels say who made a call and why: the component (registrar or
// kubelet), the kubelet operation it belongs to (MountDevice, SetUp, ...),
// the volume and pod, and for capability queries the capability asked about.
type Labels struct {
	Component string
	Operation string
	Volume    string
	Pod       string
	Asking    string
}

type labelsKey struct{}

// WithLabels attaches trace labels to every call made with ctx.
func WithLabels(ctx context.Context, l Labels) context.Context {
	return context.WithValue(ctx, labelsKey{}, l)
}

// WithAsking returns ctx with the capability being asked about set.
func WithAsking(ctx context.Context, capability string) context.Context {
	l := LabelsFrom(ctx)
	l.Asking = capability
	return WithLabels(ctx, l)
}

// LabelsFrom returns the labels attached to ctx, or zero labels.
func LabelsFrom(ctx context.Context) Labels {
	l, _ := ctx.Value(labelsKey{}).(Labels)
	return l
}

// Call is one gRPC call to the driver as the trace keeps it.
type Call struct {
	Seq      int
	Start    time.Time
	Labels   Labels
	Method   string // short name, e.g. NodePublishVolume
	Request  proto.Message
	Response proto.Message // nil when the call failed
	Code     codes.Code
	Err      error
	Duration time.Duration
	// TimedOut: the operation's context ran out while the driver had not
	// answered (the kubelet's csiTimeout), as opposed to a driver that
	// answers DeadlineExceeded itself.
	TimedOut bool
}

// Step is something the kubelet did besides calling the driver: a
// directory it created or removed, a file it wrote, an object it read, an
// error it reported. Verbose steps are printed only with -v.
type Step struct {
	Time    time.Time
	Labels  Labels
	Text    string
	Verbose bool
	Warning bool
}

// Sink receives calls and steps as they happen, so a long run prints as it
// goes.
type Sink interface {
	Call(Call)
	Step(Step)
}

// Trace is the ordered record of a run.
type Trace struct {
	mu    sync.Mutex
	calls []Call
	steps []Step
	sinks []Sink
	now   func() time.Time
}

// NewTrace returns a trace that forwards to the given sinks.
func NewTrace(sinks ...Sink) *Trace {
	return &Trace{sinks: sinks, now: time.Now}
}

// AddSink adds a sink for calls and steps recorded from now on.
func (t *Trace) AddSink(s Sink) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sinks = append(t.sinks, s)
}

func (t *Trace) record(c Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.Seq = len(t.calls) + 1
	t.calls = append(t.calls, c)
	for _, s := range t.sinks {
		s.Call(c)
	}
}

// Note records a kubelet-side step.
func (t *Trace) Note(ctx context.Context, verbose bool, text string) {
	t.step(Step{Time: t.now(), Labels: LabelsFrom(ctx), Text: text, Verbose: verbose})
}

// Warn records a kubelet-side step a person must see.
func (t *Trace) Warn(ctx context.Context, text string) {
	t.step(Step{Time: t.now(), Labels: LabelsFrom(ctx), Text: text, Warning: true})
}

func (t *Trace) step(s Step) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.steps = append(t.steps, s)
	for _, sk := range t.sinks {
		sk.Step(s)
	}
}

// Calls returns a copy of the calls recorded so far.
func (t *Trace) Calls() []Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Call(nil), t.calls...)
}

// Steps returns a copy of the steps recorded so far.
func (t *Trace) Steps() []Step {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Step(nil), t.steps...)
}

// Recorder wraps a connection and records every call into a Trace.
type Recorder struct {
	Next  grpc.ClientConnInterface
	Trace *Trace
}

var _ grpc.ClientConnInterface = (*Recorder)(nil)

// Invoke makes the call and records it, whatever its outcome.
func (r *Recorder) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	start := r.Trace.now()
	err := r.Next.Invoke(ctx, method, args, reply, opts...)
	c := Call{
		Start:    start,
		Labels:   LabelsFrom(ctx),
		Method:   path.Base(method),
		Duration: r.Trace.now().Sub(start),
		Code:     status.Code(err),
		Err:      err,
		TimedOut: err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded),
	}
	if m, ok := args.(proto.Message); ok {
		c.Request = proto.Clone(m)
	}
	if m, ok := reply.(proto.Message); ok && err == nil {
		c.Response = proto.Clone(m)
	}
	r.Trace.record(c)
	return err
}

// NewStream is not used by any CSI node call.
func (r *Recorder) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return r.Next.NewStream(ctx, desc, method, opts...)
}
