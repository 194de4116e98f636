package conformance

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// TestRunParallelSameReport: the scenarios run side by side report what
// they report one after another, in the scenarios' order, with OnStart
// and OnResult called in that order too.
func TestRunParallelSameReport(t *testing.T) {
	type line struct {
		name   string
		status Status
	}
	run := func(parallel int) (results, callbacks []line) {
		_, ep, root := startTestDriver(t, bugs{})
		conn := &csiclient.Dialer{Endpoint: ep}
		probe := csiclient.NewTrace()
		info, err := Probe(context.Background(), &csiclient.Recorder{Next: conn, Trace: probe}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		obj := csiDriver(func(s *storagev1.CSIDriverSpec) {
			s.AttachRequired = ptr(false)
			s.RequiresRepublish = ptr(true)
		})
		obj.Name = info.Name
		var mu sync.Mutex
		started := ""
		rep := Run(context.Background(), Config{
			Conn: conn, CSIDriver: obj, Focus: regexp.MustCompile("."), Parallel: parallel,
			Timeout: 20 * time.Second, Release: node.DefaultRelease(), RootDir: root, NodeName: "node-1",
			OnStart: func(s Scenario) {
				mu.Lock()
				defer mu.Unlock()
				started = s.Name
			},
			OnResult: func(r Result) {
				mu.Lock()
				defer mu.Unlock()
				if r.Status != Skip && started != r.Name {
					t.Errorf("parallel %d: OnResult(%s) right after OnStart(%s)", parallel, r.Name, started)
				}
				callbacks = append(callbacks, line{r.Name, r.Status})
			},
		}, info, probe)
		for _, r := range rep.Results {
			results = append(results, line{r.Name, r.Status})
		}
		return results, callbacks
	}
	oneByOne, _ := run(1)
	sideBySide, callbacks := run(4)
	if !slices.Equal(sideBySide, oneByOne) {
		t.Errorf("side by side:\n%v\none after another:\n%v", sideBySide, oneByOne)
	}
	if !slices.Equal(callbacks, sideBySide) {
		t.Errorf("OnResult order %v, want the report's %v", callbacks, sideBySide)
	}
	var names []string
	for _, l := range oneByOne {
		names = append(names, l.name)
	}
	if i := slices.Index(names, "timing/half-timeout"); i != len(names)-1 {
		t.Errorf("timing/half-timeout at %d of %v, want last", i, names)
	}
}

// TestVolumePool: the first volume is the run's; more are made while
// scenarios hold all of them, up to one per running scenario; after a
// failed CreateVolume, or when the driver cannot make volumes, a scenario
// waits for a volume to be free.
func TestVolumePool(t *testing.T) {
	first := &Volume{Handle: "run"}
	created := 0
	create := func(context.Context) *Volume {
		created++
		return &Volume{Handle: "more", Created: true}
	}
	fail := func(context.Context) *Volume { return &Volume{Err: errors.New("no space")} }
	briefly := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}

	p := newVolumePool(first, 3, true)
	if v, err := p.take(briefly(), create); err != nil || v != first || created != 0 {
		t.Fatalf("first take: %v, %v, %d created; want the run's volume, none created", v, err, created)
	}
	second, err := p.take(briefly(), create)
	if err != nil || second.Handle != "more" || created != 1 {
		t.Fatalf("second take: %v, %v, %d created; want a new volume", second, err, created)
	}
	if v, err := p.take(briefly(), fail); err == nil {
		t.Fatalf("third take after a failed CreateVolume got %v, want to wait (and time out)", v)
	}
	if v, err := p.take(briefly(), create); err == nil || created != 1 {
		t.Fatalf("fourth take got %v (%d created): the pool is at its bound of 3, want to wait", v, created)
	}
	p.put(first)
	if v, err := p.take(briefly(), create); err != nil || v != first || created != 1 {
		t.Fatalf("take after put: %v, %v, %d created; want the run's volume again", v, err, created)
	}
	if len(p.extra) != 1 || p.extra[0] != second {
		t.Errorf("extra volumes %v, want the one made (to delete at the end)", p.extra)
	}

	q := newVolumePool(first, 4, false)
	_, _ = q.take(briefly(), create)
	if v, err := q.take(briefly(), create); err == nil || created != 1 {
		t.Errorf("without CreateVolume a second take got %v (%d created), want to wait for the one volume", v, created)
	}
}

// logSink records the calls of a scenario's live trace into a shared log.
type logSink struct {
	add func(string)
}

func (s logSink) Call(c csiclient.Call) { s.add("call " + c.Method) }
func (s logSink) Step(csiclient.Step)   {}

// TestLiveTraceUnderItsScenario: with a live trace (-v) each scenario is
// announced (OnStart) before its first call is traced and reported
// (OnResult) before the next one starts, so that the trace prints its
// calls under its name, not under the one before.
func TestLiveTraceUnderItsScenario(t *testing.T) {
	_, ep, root := startTestDriver(t, bugs{})
	conn := &csiclient.Dialer{Endpoint: ep}
	probe := csiclient.NewTrace()
	info, err := Probe(context.Background(), &csiclient.Recorder{Next: conn, Trace: probe}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	obj := csiDriver(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr(false) })
	obj.Name = info.Name
	var mu sync.Mutex
	var log []string
	add := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, s)
	}
	Run(context.Background(), Config{
		Conn: conn, CSIDriver: obj, Timeout: 20 * time.Second, Release: node.DefaultRelease(),
		RootDir: root, NodeName: "node-1",
		Sink:     func(string) csiclient.Sink { return logSink{add} },
		OnStart:  func(s Scenario) { add("start " + s.Name) },
		OnResult: func(r Result) { add("result " + r.Name) },
	}, info, probe)
	current, calls, started := "", 0, 0
	for _, l := range log {
		switch {
		case strings.HasPrefix(l, "start "):
			if current != "" {
				t.Errorf("%s before the result of %s", l, current)
			}
			current = strings.TrimPrefix(l, "start ")
			started++
		case strings.HasPrefix(l, "result "):
			if name := strings.TrimPrefix(l, "result "); current != "" && name != current {
				t.Errorf("%s while %s runs", l, current)
			}
			current = ""
		default:
			calls++
			if current == "" {
				t.Errorf("%s traced outside any scenario (after the result of the one before, before its own start)", l)
			}
		}
	}
	if calls == 0 || started < 3 {
		t.Fatalf("%d calls traced in %d scenarios: want the scenarios' calls", calls, started)
	}
}
