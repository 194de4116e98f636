package session

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
)

// runSuiteName is the JUnit suite of `run --junit`.
const runSuiteName = "csi-kubelet-sim run"

// operationCase is one kubelet operation on one volume (or a registration
// step): the calls it made, in order.
type operationCase struct {
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

// junitSink groups the calls of a streaming trace by the operation they
// belong to (component, operation, volume, pod), in the order the
// operations began, as they happen. Retries of an operation land in its
// case.
type junitSink struct {
	mu    sync.Mutex
	ops   []*operationCase
	index map[csiclient.Labels]*operationCase
}

func NewJUnitSink() *junitSink {
	return &junitSink{index: map[csiclient.Labels]*operationCase{}}
}

func (j *junitSink) Call(c csiclient.Call) {
	j.mu.Lock()
	defer j.mu.Unlock()
	key := c.Labels
	key.Asking = ""
	oc, ok := j.index[key]
	if !ok {
		oc = &operationCase{labels: key}
		j.index[key] = oc
		j.ops = append(j.ops, oc)
	}
	oc.calls = append(oc.calls, junitCall{seq: c.Seq, method: c.Method, err: c.Err, code: c.Code, took: c.Duration})
}

func (j *junitSink) Step(csiclient.Step) {}

// operations returns the operations so far.
func (j *junitSink) Operations() []*operationCase {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]*operationCase(nil), j.ops...)
}

// testCase turns an operation into a JUnit test case: it failed when its
// last call failed (an earlier failure that a retry overcame is not a
// failure of the operation, as the kubelet got there).
func (oc *operationCase) testCase() conformance.JUnitTestCase {
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

// runJUnit is the JUnit document of a run: a test case per operation, and
// one for the run's result (what is left behind, a failure with no call of
// its own such as bad input, and the exit code).
func RunJUnit(ops []*operationCase, release node.Release, out *node.Outcome, exit error, took time.Duration) conformance.JUnitTestSuites {
	suite := conformance.JUnitTestSuite{Name: runSuiteName, Time: fmt.Sprintf("%.6f", took.Seconds())}
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
		SystemOut: "left behind " + LeftoverText(out.Leftovers)}
	if exit != nil {
		result.Failure = &conformance.JUnitFailure{Message: exit.Error(), Type: fmt.Sprintf("exit %d", ExitCode(exit)), Text: exit.Error()}
	}
	suite.TestCases = append(suite.TestCases, result)
	for _, tc := range suite.TestCases {
		suite.Tests++
		if tc.Failure != nil {
			suite.Failures++
		}
	}
	return conformance.JUnitTestSuites{Name: runSuiteName, Tests: suite.Tests, Failures: suite.Failures, Time: suite.Time,
		Suites: []conformance.JUnitTestSuite{suite}}
}

func writeRunJUnit(path string, sink *junitSink, ss *session, out *node.Outcome, exit error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	doc := RunJUnit(sink.Operations(), ss.opts.Release, out, exit, time.Since(ss.started)).Cleaned(ss.red.TextLines)
	if err := encodeJUnit(f, doc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func encodeJUnit(w io.Writer, doc conformance.JUnitTestSuites) error {
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
