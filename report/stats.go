// Package report turns the calls of a run into what a person or a CI job
// reads afterwards: per-method counts, errors and latency percentiles, the
// most calls in flight at once, the simulator's own CPU and memory (Stats),
// a live progress line on a terminal (Progress), and one self-contained
// HTML page with a timeline and latency histograms (Recorder, WriteHTML).
//
// Everything here is a csiclient sink: it sees each call once, as it
// happens, and keeps bounded state, so a run of any length costs the same
// memory when the trace itself keeps nothing (csiclient.NewStreamingTrace).
package report

import (
	"sort"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// Latencies are recorded in microseconds from 1 µs to 1 hour with three
// significant digits: a percentile is within 0.1% of the true value. The
// histogram's memory is fixed (about 170 kB per method) whatever the
// number of calls.
const (
	histLowest  = 1
	histHighest = int64(time.Hour / time.Microsecond)
	histDigits  = 3
)

// Stats counts the calls of a run per CSI method. It is a
// csiclient.BeginSink (add it with Trace.AddSink) and safe for concurrent
// use.
type Stats struct {
	mu      sync.Mutex
	methods map[string]*methodStats
	all     flight
	first   time.Time // earliest start
	last    time.Time // latest end
	// usage reads the process's CPU time and peak memory; a field so that
	// tests can fix it.
	usage func() (Process, error)
}

type methodStats struct {
	calls    int64
	errors   map[string]int64
	timedOut int64
	min, max time.Duration
	total    time.Duration
	hist     *hdrhistogram.Histogram
	flight   flight
}

var _ csiclient.BeginSink = (*Stats)(nil)

// NewStats returns empty stats.
func NewStats() *Stats {
	return &Stats{methods: map[string]*methodStats{}, all: newFlight(), usage: processUsage}
}

func (s *Stats) method(name string) *methodStats {
	m := s.methods[name]
	if m == nil {
		m = &methodStats{
			errors: map[string]int64{},
			hist:   hdrhistogram.New(histLowest, histHighest, histDigits),
			flight: newFlight(),
		}
		s.methods[name] = m
	}
	return m
}

// Begin notes that a call started (csiclient.BeginSink).
func (s *Stats) Begin(c csiclient.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all.begin(c.Start)
	s.method(c.Method).flight.begin(c.Start)
}

// Call counts a finished call (csiclient.Sink).
func (s *Stats) Call(c csiclient.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := c.Start.Add(c.Duration)
	if s.first.IsZero() || c.Start.Before(s.first) {
		s.first = c.Start
	}
	if end.After(s.last) {
		s.last = end
	}
	s.all.done(c.Start, c.Duration)
	m := s.method(c.Method)
	m.flight.done(c.Start, c.Duration)
	if m.calls == 0 || c.Duration < m.min {
		m.min = c.Duration
	}
	m.calls++
	m.max = max(m.max, c.Duration)
	m.total += c.Duration
	us := min(max(int64(c.Duration/time.Microsecond), 0), histHighest)
	_ = m.hist.RecordValue(us) // in range by construction
	if c.Err != nil || c.Code != codes.OK {
		m.errors[c.Code.String()]++
	}
	if c.TimedOut {
		m.timedOut++
	}
}

// Step is ignored: steps are not calls.
func (s *Stats) Step(csiclient.Step) {}

// Summary is what the stats hold now, with the process's CPU time and
// peak memory read at the moment of the call: call it at the end of a run.
func (s *Stats) Summary() Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := Summary{MaxInFlight: s.all.most(), Methods: []MethodSummary{}}
	if !s.first.IsZero() {
		sum.Start = s.first.UTC()
		sum.WallSeconds = s.last.Sub(s.first).Seconds()
	}
	for _, name := range methodOrder(s.methods) {
		m := s.methods[name]
		one := m.summary(name, sum.WallSeconds)
		sum.Calls += one.Calls
		sum.Errors += one.ErrorCount()
		sum.TimedOut += one.TimedOut
		sum.Methods = append(sum.Methods, one)
	}
	if sum.WallSeconds > 0 {
		sum.CallsPerSecond = round3(float64(sum.Calls) / sum.WallSeconds)
	}
	sum.WallSeconds = round3(sum.WallSeconds)
	if p, err := s.usage(); err == nil {
		sum.Process = p
		if sum.Calls > 0 {
			sum.Process.CPUPerCallMicros = round3(p.CPUSeconds * 1e6 / float64(sum.Calls))
		}
	}
	return sum
}

func (m *methodStats) summary(name string, wall float64) MethodSummary {
	out := MethodSummary{
		Method:      name,
		Calls:       m.calls,
		Errors:      map[string]int64{},
		TimedOut:    m.timedOut,
		MaxInFlight: m.flight.most(),
		Latency: Latency{
			P50:  ms(m.hist.ValueAtQuantile(50)),
			P90:  ms(m.hist.ValueAtQuantile(90)),
			P99:  ms(m.hist.ValueAtQuantile(99)),
			Min:  durMS(m.min),
			Max:  durMS(m.max),
			Mean: durMS(m.total / time.Duration(max(m.calls, 1))),
		},
		Histogram: buckets(m.hist),
	}
	for code, n := range m.errors {
		out.Errors[code] = n
	}
	if wall > 0 {
		out.CallsPerSecond = round3(float64(m.calls) / wall)
	}
	// The histogram answers with the highest value equivalent to the
	// percentile's bucket, which may lie above the exact maximum.
	out.Latency.P50 = min(out.Latency.P50, out.Latency.Max)
	out.Latency.P90 = min(out.Latency.P90, out.Latency.Max)
	out.Latency.P99 = min(out.Latency.P99, out.Latency.Max)
	return out
}

// nodeOrder lists the CSI methods in the order a volume's life calls them,
// so the table reads like the run; others follow by name.
var nodeOrder = []string{
	"GetPluginInfo", "GetPluginCapabilities", "Probe", "NodeGetInfo", "NodeGetCapabilities",
	"NodeStageVolume", "NodePublishVolume", "NodeGetVolumeStats", "NodeExpandVolume",
	"NodeUnpublishVolume", "NodeUnstageVolume",
}

func methodOrder(methods map[string]*methodStats) []string {
	rank := func(name string) int {
		for i, n := range nodeOrder {
			if n == name {
				return i
			}
		}
		return len(nodeOrder)
	}
	names := make([]string, 0, len(methods))
	for n := range methods {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := rank(names[i]), rank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	return names
}

func ms(us int64) float64 { return round3(float64(us) / 1000) }

func durMS(d time.Duration) float64 { return ms(int64(d / time.Microsecond)) }

func round3(f float64) float64 {
	if f < 0 {
		return -float64(int64(-f*1000+0.5)) / 1000
	}
	return float64(int64(f*1000+0.5)) / 1000
}
