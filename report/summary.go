package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// Summary is the report of a run. Its JSON form is for CI; the field
// names are stable:
//
//	{
//	  "start": "2026-01-02T15:04:05Z",  // the first call's start, UTC
//	  "wall_seconds": 1.93,             // first call's start to last call's end
//	  "calls": 660,                     // every call to the driver
//	  "errors": 3,                      // calls that did not answer OK
//	  "timed_out": 1,                   // of those, cut off by the kubelet's timeout
//	  "calls_per_second": 341.97,       // calls / wall_seconds
//	  "max_in_flight": 110,             // most calls in flight at one instant
//	  "methods": [{                     // in the order a volume's life calls them
//	    "method": "NodePublishVolume",
//	    "calls": 110, "errors": {"Internal": 2}, "timed_out": 0,
//	    "calls_per_second": 56.99, "max_in_flight": 110,
//	    "latency_ms": {"p50": 201.3, "p90": 203.1, "p99": 204.0,
//	                   "min": 200.1, "max": 204.2, "mean": 201.5},
//	    "histogram": [{"from_ms": 200, "to_ms": 250, "count": 110}]
//	  }],
//	  "process": {"cpu_user_seconds": 0.15, "cpu_system_seconds": 0.06,
//	              "cpu_seconds": 0.21, "cpu_per_call_us": 318.2,
//	              "peak_rss_bytes": 35651584}
//	}
//
// Percentiles come from an HdrHistogram with three significant digits
// (within 0.1%); min, max and mean are exact. Times are milliseconds with
// microsecond resolution. "errors" of a method is keyed by the gRPC code's
// name and is {} when every call answered OK. The histogram's buckets are
// ten a decade (1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8 times a power of
// ten; from_ms inclusive, to_ms exclusive), from the first non-empty
// bucket to the last.
type Summary struct {
	Start          time.Time       `json:"start"`
	WallSeconds    float64         `json:"wall_seconds"`
	Calls          int64           `json:"calls"`
	Errors         int64           `json:"errors"`
	TimedOut       int64           `json:"timed_out"`
	CallsPerSecond float64         `json:"calls_per_second"`
	MaxInFlight    int             `json:"max_in_flight"`
	Methods        []MethodSummary `json:"methods"`
	Process        Process         `json:"process"`
}

// MethodSummary is one CSI method's line of the report.
type MethodSummary struct {
	Method         string           `json:"method"`
	Calls          int64            `json:"calls"`
	Errors         map[string]int64 `json:"errors"`
	TimedOut       int64            `json:"timed_out"`
	CallsPerSecond float64          `json:"calls_per_second"`
	MaxInFlight    int              `json:"max_in_flight"`
	Latency        Latency          `json:"latency_ms"`
	Histogram      []Bucket         `json:"histogram"`
}

// Latency holds a method's latencies in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Bucket is one bar of a latency histogram: calls that took from FromMS
// (inclusive) to ToMS (exclusive).
type Bucket struct {
	FromMS float64 `json:"from_ms"`
	ToMS   float64 `json:"to_ms"`
	Count  int64   `json:"count"`
}

// Process is the simulator's own cost, so a user can see that the tool is
// not the bottleneck: CPU time and peak resident memory of the whole
// process (getrusage), read when the summary is made.
type Process struct {
	CPUUserSeconds   float64 `json:"cpu_user_seconds"`
	CPUSystemSeconds float64 `json:"cpu_system_seconds"`
	CPUSeconds       float64 `json:"cpu_seconds"`
	CPUPerCallMicros float64 `json:"cpu_per_call_us"`
	PeakRSSBytes     int64   `json:"peak_rss_bytes"`
}

// ErrorCount is the number of the method's calls that did not answer OK.
func (m MethodSummary) ErrorCount() int64 {
	var n int64
	for _, c := range m.Errors {
		n += c
	}
	return n
}

// processUsage reads the process's own rusage. On Linux ru_maxrss is in
// kilobytes (getrusage(2)).
func processUsage() (Process, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return Process{}, fmt.Errorf("getrusage: %w", err)
	}
	user := time.Duration(ru.Utime.Nano())
	sys := time.Duration(ru.Stime.Nano())
	return Process{
		CPUUserSeconds:   round3(user.Seconds()),
		CPUSystemSeconds: round3(sys.Seconds()),
		CPUSeconds:       round3((user + sys).Seconds()),
		PeakRSSBytes:     ru.Maxrss * 1024,
	}, nil
}

// bucketEdges are ten steps a decade in microseconds (the R10 series:
// 1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8), from 1 µs to 1 hour: fine
// enough to see a spread within a decade, and 1, 2 and 5 are edges.
var bucketEdges = func() []float64 {
	r10 := []float64{1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8}
	var e []float64
	for d := 1.0; d <= float64(histHighest); d *= 10 {
		for _, r := range r10 {
			e = append(e, r*d)
		}
	}
	return e
}()

// buckets folds the histogram into the R10 buckets, dropping the empty
// ones before the first call and after the last. A histogram bar (a range
// of values the histogram does not tell apart) goes by its highest value,
// as the percentiles do: 200 ms lands in 200-250 ms, not 160-200 ms.
func buckets(h *hdrhistogram.Histogram) []Bucket {
	counts := make([]int64, len(bucketEdges))
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		top := float64(bar.To)
		i := sort.SearchFloat64s(bucketEdges, top)
		if i == len(bucketEdges) || bucketEdges[i] > top {
			i--
		}
		counts[max(i, 0)] += bar.Count
	}
	first, last := -1, -1
	for i, c := range counts {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	out := []Bucket{}
	for i := first; i >= 0 && i <= last; i++ {
		to := bucketEdges[len(bucketEdges)-1] * 1.25
		if i+1 < len(bucketEdges) {
			to = bucketEdges[i+1]
		}
		out = append(out, Bucket{FromMS: round3(bucketEdges[i] / 1000), ToMS: round3(to / 1000), Count: counts[i]})
	}
	return out
}

// WriteJSON writes the summary as one indented JSON object.
func (s Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write the report as JSON: %w", err)
	}
	return nil
}

// WriteText writes the summary for a person: a table with one line per
// method and a total, the errors by code, and the simulator's own cost.
func (s Summary) WriteText(w io.Writer) error {
	// Numbers align right; the method names, padded to one width, read
	// as a left-aligned column.
	width := len("method")
	for _, m := range s.Methods {
		width = max(width, len(m.Method))
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tcalls\terrors\tp50 ms\tp90 ms\tp99 ms\tmax ms\tcalls/s\tin flight\t\n", width, "method")
	for _, m := range s.Methods {
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n", width, m.Method, m.Calls, m.ErrorCount(),
			m.Latency.P50, m.Latency.P90, m.Latency.P99, m.Latency.Max, m.CallsPerSecond, m.MaxInFlight)
	}
	fmt.Fprintf(tw, "%-*s\t%d\t%d\t\t\t\t\t%.1f\t%d\t\n", width, "total", s.Calls, s.Errors, s.CallsPerSecond, s.MaxInFlight)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	// Right alignment pads the first column on its left too.
	for line := range strings.Lines(table.String()) {
		if _, err := io.WriteString(w, strings.TrimPrefix(line, "  ")); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	}
	var errs []string
	for _, m := range s.Methods {
		for _, code := range sortedCodes(m.Errors) {
			errs = append(errs, fmt.Sprintf("%s %s x%d", m.Method, code, m.Errors[code]))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "errors: %s\n", strings.Join(errs, ", "))
	}
	if s.TimedOut > 0 {
		fmt.Fprintf(w, "timed out: %d calls had no answer before the kubelet's timeout\n", s.TimedOut)
	}
	fmt.Fprintf(w, "run: %d calls in %.3f s, %.1f calls/s, at most %d in flight at once\n",
		s.Calls, s.WallSeconds, s.CallsPerSecond, s.MaxInFlight)
	p := s.Process
	_, err := fmt.Fprintf(w, "simulator: CPU %.3f s (user %.3f s, system %.3f s; %.1f µs per call), peak RSS %.1f MiB\n",
		p.CPUSeconds, p.CPUUserSeconds, p.CPUSystemSeconds, p.CPUPerCallMicros, float64(p.PeakRSSBytes)/(1<<20))
	if err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}

func sortedCodes(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
