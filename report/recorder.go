package report

import (
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// DefaultMaxRecords is how many calls a page draws by default: enough for
// a node of 110 pods many times over, few enough for a browser to stay
// quick.
const DefaultMaxRecords = 20000

// Record is what the HTML page knows of a call: who made it, when, how
// long it took and how it ended. Never the request, the response or the
// error text, which may carry secrets.
type Record struct {
	Seq      int
	Start    time.Time
	Duration time.Duration
	Method   string
	Labels   csiclient.Labels
	Code     codes.Code
	TimedOut bool
	// Err is the call's error text, without the request's secrets.
	Err string
}

// Recorded is the calls a Recorder kept and how many it saw in all.
type Recorded struct {
	Records []Record
	Seen    int64
}

// Recorder is a csiclient sink that keeps the first Max calls as Records
// for the HTML page and counts the rest, so its memory is bounded however
// long the run. Safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	red  csiclient.Redactor
	max  int
	recs []Record
	seen int64
}

var _ csiclient.Sink = (*Recorder)(nil)

// NewRecorder keeps at most max calls (DefaultMaxRecords when max <= 0).
func NewRecorder(max int) *Recorder {
	if max <= 0 {
		max = DefaultMaxRecords
	}
	return &Recorder{max: max}
}

// WithRedactor makes the Recorder keep each error as red.Short gives it:
// scrubbed of the run's secrets, cut and escaped. Call it before the
// first call.
func (r *Recorder) WithRedactor(red csiclient.Redactor) *Recorder {
	r.red = red
	return r
}

// Call keeps the call if there is room.
func (r *Recorder) Call(c csiclient.Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen++
	if len(r.recs) >= r.max {
		return
	}
	r.recs = append(r.recs, Record{
		Seq: c.Seq, Start: c.Start, Duration: c.Duration, Method: c.Method,
		Labels: c.Labels, Code: c.Code, TimedOut: c.TimedOut, Err: errorText(c, r.red),
	})
}

// Step is ignored: the page draws calls.
func (r *Recorder) Step(csiclient.Step) {}

// Recorded returns a copy of what was kept.
func (r *Recorder) Recorded() Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Recorded{Records: append([]Record(nil), r.recs...), Seen: r.seen}
}
