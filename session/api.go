package session

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// The Go entry points of the engine: what `run` and `conformance` do,
// callable from a Go program (a driver's `go test`) without the command
// line. The options start from the commands' flag defaults; with no
// printer (Printer, Observer) nothing is printed: what happened comes back
// as data. Streams.In is what a manifest "-" reads; Streams.Err takes the
// admission helper's own stderr.

// NewRunOptions are `run`'s options with its flags' defaults, against the
// driver's socket endpoint, printing nothing.
func NewRunOptions(endpoint string) *RunOptions {
	o := &RunOptions{
		EndpointFlag:  EndpointFlag{Endpoint: endpoint},
		Streams:       Streams{In: eofReader{}, Out: io.Discard, Err: io.Discard},
		Hold:          "0",
		SyncFrequency: time.Minute,
		StatsPeriod:   time.Minute,
	}
	o.CommonOptions = defaultCommonOptions()
	o.Apiserver.DriverWait = time.Minute
	return o
}

// defaultCommonOptions are the defaults of the flags run, plan and load
// share.
func defaultCommonOptions() CommonOptions {
	return CommonOptions{
		ReleaseFlags:          ReleaseFlags{KubeletVersion: node.DefaultVersion.String()},
		OutputFlag:            OutputFlag{Output: "text"},
		TimeoutFlag:           TimeoutFlag{Timeout: node.DefaultTimeout},
		MaxAttempts:           1,
		ServiceAccountOptions: ServiceAccountOptions{Issuer: tokens.DefaultIssuer},
	}
}

// RunResult is what one run did.
type RunResult struct {
	// Outcome is the kubelet's: the pods, their volumes, what was left.
	Outcome *node.Outcome
	// Calls are every call to the driver, with its request and answer
	// as the driver got them (secrets too: the caller's own), in the order
	// they ended;
	// Steps are the kubelet's notes between them.
	Calls []csiclient.Call
	Steps []csiclient.Step
}

// RunPod runs the kubelet's node lifecycle for the pods of o's manifests
// (o.Filenames) against the driver, as `run` does, and returns every
// call. The error is the run's, with the command's exit code in it
// (ExitCode); the result is there whenever the kubelet ran. o serves one
// call.
func RunPod(ctx context.Context, o *RunOptions) (*RunResult, error) {
	log := &CallLog{}
	o.Observers = append(o.Observers, log)
	if err := o.Complete(nil); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	err := o.Run(ctx)
	if o.outcome == nil {
		return nil, err
	}
	calls, steps := log.Recorded()
	return &RunResult{Outcome: o.outcome, Calls: calls, Steps: steps}, err
}

// NewConformanceOptions are `conformance`'s options with its flags'
// defaults, against the driver's socket endpoint, printing nothing.
func NewConformanceOptions(endpoint string) *ConformanceOptions {
	o := &ConformanceOptions{
		EndpointFlag: EndpointFlag{Endpoint: endpoint},
		OutputFlag:   OutputFlag{Output: "text"},
		TimeoutFlag:  TimeoutFlag{Timeout: node.DefaultTimeout},
		ReleaseFlags: ReleaseFlags{KubeletVersion: node.DefaultVersion.String()},
		Streams:      Streams{In: eofReader{}, Out: io.Discard, Err: io.Discard},
		Parallel:     conformance.DefaultParallel,
	}
	o.Apiserver.DriverWait = time.Minute
	return o
}

// Conformance runs the conformance scenarios o selects against the
// driver, as `conformance` does, and returns the report: a result per
// scenario. OnResult, when set, is called as each scenario ends. The
// error is the command's (a failed scenario is ExitFailed); the report is
// there whenever the scenarios ran.
func Conformance(ctx context.Context, o *ConformanceOptions) (*conformance.Report, error) {
	if err := o.Complete(nil); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	err := o.Run(ctx)
	return o.report, err
}

// CallLog is an observer that keeps every call and step of a run.
type CallLog struct {
	mu    sync.Mutex
	calls []csiclient.Call
	steps []csiclient.Step
}

// Call keeps a call (csiclient.Sink).
func (l *CallLog) Call(c csiclient.Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

// Step keeps a step (csiclient.Sink).
func (l *CallLog) Step(s csiclient.Step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.steps = append(l.steps, s)
}

// Recorded are the calls and steps so far.
func (l *CallLog) Recorded() ([]csiclient.Call, []csiclient.Step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]csiclient.Call(nil), l.calls...), append([]csiclient.Step(nil), l.steps...)
}

// eofReader is the stdin of a Go caller: a manifest "-" reads nothing.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
