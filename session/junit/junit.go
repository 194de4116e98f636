// Package junit answers what `run --junit` writes: the run as a JUnit
// document, a test case per kubelet operation on a volume (or
// registration step) with its calls, and one for the run's result.
package junit

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
)

// suiteName is the JUnit suite of `run --junit`.
const suiteName = "csi-kubelet-sim run"

// Operation is one kubelet operation on one volume (or a registration
// step): the calls it made, in order.
type Operation struct {
	labels csiclient.Labels
	calls  []junitCall
}

// junitCall is what a test case keeps of a call: not its request or
// answer, so that a long run keeps little.
type junitCall struct {
	seq    int
	method string
	err    error
	code   codes.Code
	took   time.Duration
}

// Sink groups the calls of a streaming trace by the operation they
// belong to (component, operation, volume, pod), in the order the
// operations began, as they happen. Retries of an operation land in its
// case.
type Sink struct {
	mu    sync.Mutex
	ops   []*Operation
	index map[csiclient.Labels]*Operation
}

// NewSink is an empty Sink; add it to the run's trace.
func NewSink() *Sink {
	return &Sink{index: map[csiclient.Labels]*Operation{}}
}

func (j *Sink) Call(c csiclient.Call) {
	j.mu.Lock()
	defer j.mu.Unlock()
	key := c.Labels
	key.Asking = ""
	oc, ok := j.index[key]
	if !ok {
		oc = &Operation{labels: key}
		j.index[key] = oc
		j.ops = append(j.ops, oc)
	}
	oc.calls = append(oc.calls, junitCall{seq: c.Seq, method: c.Method, err: c.Err, code: c.Code, took: c.Duration})
}

func (j *Sink) Step(csiclient.Step) {}

// Operations returns the operations so far.
func (j *Sink) Operations() []*Operation {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]*Operation(nil), j.ops...)
}

// testCase turns an operation into a JUnit test case: it failed when its
// last call failed (an earlier failure that a retry overcame is not a
// failure of the operation, as the kubelet got there).
func (oc *Operation) testCase() conformance.JUnitTestCase {
	l := oc.labels
	name := l.Operation
	if name == "" {
		name = "(no operation)"
	}
	if l.Volume != "" {
		name += " " + l.Volume
	}
	if l.Pod != "" {
		name += " (" + l.Pod + ")"
	}
	var took time.Duration
	var lines []string
	for _, c := range oc.calls {
		took += c.took
		res := "OK"
		if c.err != nil {
			res = c.err.Error()
		}
		lines = append(lines, fmt.Sprintf("%d %s %s %s", c.seq, c.method, res, c.took.Round(time.Microsecond)))
	}
	tc := conformance.JUnitTestCase{
		Name:      name,
		ClassName: "csi-kubelet-sim.run." + l.Component,
		Time:      fmt.Sprintf("%.6f", took.Seconds()),
		SystemOut: strings.Join(lines, "\n"),
	}
	if last := oc.calls[len(oc.calls)-1]; last.err != nil {
		msg := fmt.Sprintf("%s: %v", last.method, last.err)
		tc.Failure = &conformance.JUnitFailure{Message: msg, Type: last.code.String(), Text: tc.SystemOut}
	}
	return tc
}

// Suites is the JUnit document of a run: a test case per operation, and
// one for the run's result (what is left behind, leftBehind as the
// session says it; a failure with no call of its own such as bad input;
// and the exit code).
func Suites(ops []*Operation, release node.Release, out *node.Outcome, leftBehind string, exit error, took time.Duration) conformance.JUnitTestSuites {
	suite := conformance.JUnitTestSuite{Name: suiteName, Time: fmt.Sprintf("%.6f", took.Seconds())}
	suite.Properties = append(suite.Properties, conformance.JUnitProperty{Name: "kubelet", Value: release.Describe()})
	if r := out.Registration; r != nil {
		suite.Properties = append(suite.Properties,
			conformance.JUnitProperty{Name: "driver", Value: r.DriverName},
			conformance.JUnitProperty{Name: "vendor_version", Value: r.VendorVersion})
	}
	for _, oc := range ops {
		suite.TestCases = append(suite.TestCases, oc.testCase())
	}
	result := conformance.JUnitTestCase{Name: "result", ClassName: "csi-kubelet-sim.run", Time: suite.Time,
		SystemOut: "left behind " + leftBehind}
	if exit != nil {
		result.Failure = &conformance.JUnitFailure{Message: exit.Error(), Type: fmt.Sprintf("exit %d", exitcode.Of(exit)), Text: exit.Error()}
	}
	suite.TestCases = append(suite.TestCases, result)
	for _, tc := range suite.TestCases {
		suite.Tests++
		if tc.Failure != nil {
			suite.Failures++
		}
	}
	return conformance.JUnitTestSuites{Name: suiteName, Tests: suite.Tests, Failures: suite.Failures, Time: suite.Time,
		Suites: []conformance.JUnitTestSuite{suite}}
}

// Write writes doc to the file path, replacing it.
func Write(path string, doc conformance.JUnitTestSuites) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := encode(f, doc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func encode(w io.Writer, doc conformance.JUnitTestSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
