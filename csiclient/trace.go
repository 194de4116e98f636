package csiclient

import (
	"context"
	"errors"
	"path"
	"sync"
	"sync/atomic"
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

// BeginSink is a Sink that is also told when a call starts, before the
// driver answers, so it can count the calls in flight. The Call it gets has
// only Start, Labels and Method; the same Start comes back in the finished
// Call. Begins arrive in the order of their Start times.
type BeginSink interface {
	Sink
	Begin(Call)
}

// Trace is the ordered record of a run.
type Trace struct {
	mu    sync.Mutex
	keep  bool // false: streaming, calls and steps go to the sinks only
	seq   int
	calls []Call
	steps []Step
	sinks []Sink
	// begins is set once a BeginSink is added, so that a trace without
	// one takes no lock when a call starts.
	begins atomic.Bool
	now    func() time.Time
}

// NewTrace returns a trace that keeps every call and step (Calls, Steps)
// and forwards them to the given sinks.
func NewTrace(sinks ...Sink) *Trace {
	t := &Trace{keep: true, now: time.Now}
	for _, s := range sinks {
		t.AddSink(s)
	}
	return t
}

// NewStreamingTrace returns a trace that only forwards calls and steps to
// its sinks and keeps none of them, so that a run of any length (a load
// test, --hold forever) takes constant memory. Calls and Steps return nil.
func NewStreamingTrace(sinks ...Sink) *Trace {
	t := NewTrace(sinks...)
	t.keep = false
	return t
}

// AddSink adds a sink for calls and steps recorded from now on.
func (t *Trace) AddSink(s Sink) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sinks = append(t.sinks, s)
	if _, ok := s.(BeginSink); ok {
		t.begins.Store(true)
	}
}

// begin reads a call's start time and tells the BeginSinks. The time is
// read under the lock so that begins reach the sinks in the order of their
// start times, which lets a sink know that no call it has not yet seen
// started before the ones in flight.
func (t *Trace) begin(l Labels, method string) time.Time {
	if !t.begins.Load() {
		return t.now()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	start := t.now()
	for _, s := range t.sinks {
		if b, ok := s.(BeginSink); ok {
			b.Begin(Call{Start: start, Labels: l, Method: method})
		}
	}
	return start
}

func (t *Trace) record(c Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	c.Seq = t.seq
	if t.keep {
		t.calls = append(t.calls, c)
	}
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
	if t.keep {
		t.steps = append(t.steps, s)
	}
	for _, sk := range t.sinks {
		sk.Step(s)
	}
}

// Calls returns a copy of the calls recorded so far (nil for a streaming
// trace).
func (t *Trace) Calls() []Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Call(nil), t.calls...)
}

// Steps returns a copy of the steps recorded so far (nil for a streaming
// trace).
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
	labels := LabelsFrom(ctx)
	short := path.Base(method)
	start := r.Trace.begin(labels, short)
	err := r.Next.Invoke(ctx, method, args, reply, opts...)
	c := Call{
		Start:    start,
		Labels:   labels,
		Method:   short,
		Duration: r.Trace.now().Sub(start),
		Code:     status.Code(err),
		Err:      err,
		TimedOut: cutOff(ctx, err),
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

// deadlineSlack is how close to the operation's deadline a DeadlineExceeded
// answer counts as the deadline's: gRPC hands the deadline to the driver,
// whose context can end a moment before the caller's timer fires.
const deadlineSlack = 50 * time.Millisecond

// cutOff tells whether a call failed because the operation's timeout ran
// out, as opposed to a driver answering DeadlineExceeded on its own.
func cutOff(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && status.Code(err) == codes.DeadlineExceeded && time.Until(deadline) < deadlineSlack
}
