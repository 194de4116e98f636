package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func fixedUsage() (Process, error) {
	return Process{CPUUserSeconds: 0.2, CPUSystemSeconds: 0.1, CPUSeconds: 0.3, PeakRSSBytes: 30 << 20}, nil
}

func newTestStats() *Stats {
	s := NewStats()
	s.usage = fixedUsage
	return s
}

// call makes a finished call starting at t0+at that took d.
func call(method string, at, d time.Duration, code codes.Code) csiclient.Call {
	c := csiclient.Call{Start: t0.Add(at), Duration: d, Method: method, Code: code}
	if code != codes.OK {
		c.Err = status.Error(code, "failed")
	}
	return c
}

// Percentiles of 1 ms, 2 ms, ... 100 ms: p50 is 50 ms, p90 90 ms, p99 99
// ms (within the histogram's 0.1%), min, max and mean exact.
func TestPercentiles(t *testing.T) {
	s := newTestStats()
	for i := 1; i <= 100; i++ {
		s.Call(call("NodePublishVolume", time.Duration(i)*time.Second, time.Duration(i)*time.Millisecond, codes.OK))
	}
	got := s.Summary().Methods[0].Latency
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"p50", got.P50, 50}, {"p90", got.P90, 90}, {"p99", got.P99, 99},
		{"min", got.Min, 1}, {"max", got.Max, 100}, {"mean", got.Mean, 50.5},
	} {
		if tc.got < tc.want || tc.got > tc.want*1.001 {
			t.Errorf("%s = %v ms, want %v ms (+0.1%%)", tc.name, tc.got, tc.want)
		}
	}
	if got.Min != 1 || got.Max != 100 || got.Mean != 50.5 {
		t.Errorf("min/max/mean = %v/%v/%v, want exactly 1/100/50.5", got.Min, got.Max, got.Mean)
	}
}

// One slow outlier among 999 fast calls moves p99.9 and max, not p99.
func TestPercentilesOutlier(t *testing.T) {
	s := newTestStats()
	for i := range 999 {
		s.Call(call("NodeStageVolume", time.Duration(i)*time.Second, 2*time.Millisecond, codes.OK))
	}
	s.Call(call("NodeStageVolume", 2000*time.Second, 3*time.Second, codes.OK))
	got := s.Summary().Methods[0].Latency
	if got.P50 != 2 || got.P99 != 2 || got.Max != 3000 {
		t.Errorf("p50/p99/max = %v/%v/%v ms, want 2/2/3000", got.P50, got.P99, got.Max)
	}
}

func TestErrorsByCode(t *testing.T) {
	s := newTestStats()
	for _, c := range []csiclient.Call{
		call("NodePublishVolume", 0, time.Millisecond, codes.OK),
		call("NodePublishVolume", 1*time.Second, time.Millisecond, codes.Internal),
		call("NodePublishVolume", 2*time.Second, time.Millisecond, codes.Internal),
		call("NodePublishVolume", 3*time.Second, time.Millisecond, codes.Aborted),
		call("NodeStageVolume", 4*time.Second, time.Millisecond, codes.OK),
		{Start: t0.Add(5 * time.Second), Duration: time.Second, Method: "NodeStageVolume", Code: codes.DeadlineExceeded,
			Err: status.Error(codes.DeadlineExceeded, "context deadline exceeded"), TimedOut: true},
		// Not a gRPC status: the trace has it as Unknown.
		{Start: t0.Add(6 * time.Second), Method: "NodeStageVolume", Code: codes.Unknown, Err: errors.New("dial unix: no such file")},
	} {
		s.Call(c)
	}
	sum := s.Summary()
	if sum.Calls != 7 || sum.Errors != 5 || sum.TimedOut != 1 {
		t.Errorf("calls/errors/timed out = %d/%d/%d, want 7/5/1", sum.Calls, sum.Errors, sum.TimedOut)
	}
	want := map[string]map[string]int64{
		"NodeStageVolume":   {"DeadlineExceeded": 1, "Unknown": 1},
		"NodePublishVolume": {"Internal": 2, "Aborted": 1},
	}
	for _, m := range sum.Methods {
		if len(m.Errors) != len(want[m.Method]) {
			t.Errorf("%s errors = %v, want %v", m.Method, m.Errors, want[m.Method])
		}
		for code, n := range want[m.Method] {
			if m.Errors[code] != n {
				t.Errorf("%s errors = %v, want %v", m.Method, m.Errors, want[m.Method])
			}
		}
	}
	// A volume's life order: stage before publish.
	if sum.Methods[0].Method != "NodeStageVolume" || sum.Methods[1].Method != "NodePublishVolume" {
		t.Errorf("method order = %s, %s", sum.Methods[0].Method, sum.Methods[1].Method)
	}
}

// interval is a call from at to at+d, in milliseconds.
type interval struct {
	method string
	at, d  int
}

// The most calls in flight at once, from overlapping calls laid out by
// hand; calls arrive in the order they end, as the trace sends them.
func TestMaxInFlight(t *testing.T) {
	for _, tc := range []struct {
		name     string
		calls    []interval
		want     int
		wantPubs int
	}{
		{"one call", []interval{{"NodePublishVolume", 0, 10}}, 1, 1},
		{"back to back do not overlap", []interval{{"NodePublishVolume", 0, 10}, {"NodePublishVolume", 10, 10}, {"NodePublishVolume", 20, 10}}, 1, 1},
		{"three at once", []interval{{"NodePublishVolume", 0, 100}, {"NodePublishVolume", 10, 100}, {"NodeStageVolume", 20, 100}}, 3, 2},
		{"a long call under two short ones that do not overlap each other", []interval{
			{"NodeStageVolume", 0, 1000}, {"NodePublishVolume", 100, 10}, {"NodePublishVolume", 200, 10}}, 2, 1},
		{"the peak in the middle", []interval{
			{"NodePublishVolume", 0, 50}, {"NodePublishVolume", 40, 50}, {"NodePublishVolume", 45, 50},
			{"NodePublishVolume", 60, 50}, {"NodeStageVolume", 200, 5}}, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, withBegins := range []bool{true, false} {
				s := newTestStats()
				feed(s, tc.calls, withBegins)
				sum := s.Summary()
				if sum.MaxInFlight != tc.want {
					t.Errorf("begins %v: max in flight = %d, want %d", withBegins, sum.MaxInFlight, tc.want)
				}
				for _, m := range sum.Methods {
					if m.Method == "NodePublishVolume" && m.MaxInFlight != tc.wantPubs {
						t.Errorf("begins %v: NodePublishVolume in flight = %d, want %d", withBegins, m.MaxInFlight, tc.wantPubs)
					}
				}
			}
		})
	}
}

// feed plays calls as the trace would: begins in start order and each
// call when it ends, interleaved by time.
func feed(s *Stats, calls []interval, withBegins bool) {
	type ev struct {
		t     int
		begin bool
		c     csiclient.Call
	}
	var evs []ev
	for _, iv := range calls {
		c := call(iv.method, time.Duration(iv.at)*time.Millisecond, time.Duration(iv.d)*time.Millisecond, codes.OK)
		evs = append(evs, ev{iv.at, true, c}, ev{iv.at + iv.d, false, c})
	}
	// Ends before begins at the same instant, as the sweep counts them.
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return !evs[i].begin && evs[j].begin
	})
	for _, e := range evs {
		switch {
		case e.begin && withBegins:
			s.Begin(e.c)
		case !e.begin:
			s.Call(e.c)
		}
	}
}

// With begins, memory stays bounded: a long run of calls two at a time
// holds only a few events, and the answer is still exact.
func TestMaxInFlightBounded(t *testing.T) {
	s := newTestStats()
	var calls []interval
	for i := range 10000 {
		calls = append(calls, interval{"NodeGetVolumeStats", i * 10, 15})
	}
	feed(s, calls, true)
	if n := len(s.all.pending); n > 200 {
		t.Errorf("%d events held after 10000 calls, want a bounded few", n)
	}
	if got := s.Summary().MaxInFlight; got != 2 {
		t.Errorf("max in flight = %d, want 2", got)
	}
}

// The JSON carries the documented field names.
func TestJSONShape(t *testing.T) {
	s := newTestStats()
	s.Call(call("NodeStageVolume", 0, 2*time.Millisecond, codes.OK))
	s.Call(call("NodePublishVolume", 500*time.Millisecond, 3*time.Millisecond, codes.Internal))
	s.Call(call("NodePublishVolume", 997*time.Millisecond, 3*time.Millisecond, codes.OK))
	var buf bytes.Buffer
	if err := s.Summary().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	wantTop := []string{"start", "wall_seconds", "calls", "errors", "timed_out", "calls_per_second", "max_in_flight", "methods", "process"}
	if len(got) != len(wantTop) {
		t.Errorf("top-level fields = %v, want %v", keys(got), wantTop)
	}
	for _, k := range wantTop {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, buf.String())
		}
	}
	if got["start"] != "2026-01-02T15:04:05Z" || got["wall_seconds"] != 1.0 || got["calls"] != 3.0 || got["calls_per_second"] != 3.0 {
		t.Errorf("start/wall/calls/rate = %v %v %v %v", got["start"], got["wall_seconds"], got["calls"], got["calls_per_second"])
	}
	methods := got["methods"].([]any)
	pub := methods[1].(map[string]any)
	for _, k := range []string{"method", "calls", "errors", "timed_out", "calls_per_second", "max_in_flight", "latency_ms", "histogram"} {
		if _, ok := pub[k]; !ok {
			t.Errorf("no %q in method %v", k, pub)
		}
	}
	if pub["method"] != "NodePublishVolume" || pub["errors"].(map[string]any)["Internal"] != 1.0 {
		t.Errorf("method = %v", pub)
	}
	lat := pub["latency_ms"].(map[string]any)
	if lat["p50"] != 3.0 || lat["p90"] != 3.0 || lat["p99"] != 3.0 || lat["max"] != 3.0 {
		t.Errorf("latency_ms = %v", lat)
	}
	hist := pub["histogram"].([]any)
	if len(hist) != 1 || hist[0].(map[string]any)["from_ms"] != 2.5 || hist[0].(map[string]any)["to_ms"] != 3.15 || hist[0].(map[string]any)["count"] != 2.0 {
		t.Errorf("histogram = %v, want one bucket 2.5-3.15 ms of 2 calls", hist)
	}
	if stage := methods[0].(map[string]any); len(stage["errors"].(map[string]any)) != 0 {
		t.Errorf("errors of an all-OK method = %v, want {}", stage["errors"])
	}
	proc := got["process"].(map[string]any)
	if proc["cpu_seconds"] != 0.3 || proc["peak_rss_bytes"] != float64(30<<20) || proc["cpu_per_call_us"] != 100000.0 {
		t.Errorf("process = %v", proc)
	}
}

func keys(m map[string]any) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	return k
}

func TestTextTable(t *testing.T) {
	s := newTestStats()
	s.Call(call("NodeStageVolume", 0, 2*time.Millisecond, codes.OK))
	s.Call(call("NodePublishVolume", 500*time.Millisecond, 3*time.Millisecond, codes.Internal))
	s.Call(call("NodePublishVolume", 997*time.Millisecond, 3*time.Millisecond, codes.OK))
	var buf bytes.Buffer
	if err := s.Summary().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := `method             calls  errors  p50 ms  p90 ms  p99 ms  max ms  calls/s  in flight
NodeStageVolume        1       0     2.0     2.0     2.0     2.0      1.0          1
NodePublishVolume      2       1     3.0     3.0     3.0     3.0      2.0          1
total                  3       1                                      3.0          1
errors: NodePublishVolume Internal x1
run: 3 calls in 1.000 s, 3.0 calls/s, at most 1 in flight at once
simulator: CPU 0.300 s (user 0.200 s, system 0.100 s; 100000.0 µs per call), peak RSS 30.0 MiB
`
	if got := buf.String(); got != want {
		t.Errorf("text =\n%s\nwant\n%s", got, want)
	}
}

// The process figures are the real ones: some CPU, some memory.
func TestProcessUsage(t *testing.T) {
	p, err := processUsage()
	if err != nil {
		t.Fatal(err)
	}
	if p.CPUSeconds <= 0 || p.PeakRSSBytes < 1<<20 {
		t.Errorf("usage = %+v, want some CPU and at least 1 MiB", p)
	}
}

func TestEmptySummary(t *testing.T) {
	var buf bytes.Buffer
	if err := newTestStats().Summary().WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "run: 0 calls") {
		t.Errorf("text = %s", buf.String())
	}
}

// Latencies fall in buckets of ten a decade; empty buckets between the
// fastest and the slowest are kept, so the gaps show.
func TestHistogramBuckets(t *testing.T) {
	s := newTestStats()
	for i, d := range []time.Duration{40, 40, 40, 45, 45, 49, 200} {
		s.Call(call("NodeStageVolume", time.Duration(i)*time.Second, d*time.Millisecond, codes.OK))
	}
	got := s.Summary().Methods[0].Histogram
	want := []Bucket{{40, 50, 6}, {50, 63, 0}, {63, 80, 0}, {80, 100, 0}, {100, 125, 0}, {125, 160, 0}, {160, 200, 0}, {200, 250, 1}}
	if len(got) != len(want) {
		t.Fatalf("buckets = %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bucket %d = %v, want %v", i, got[i], want[i])
		}
	}
}
