package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// The page is drawn in Go as inline SVG: it needs nothing from the network
// and shows everything with scripts off. The small inline script only
// filters lanes and marks the page as rendered (for the browser test).

const (
	// The timeline fits a 1280-pixel window (label, plot and margins);
	// the page's zoom widens the plot.
	plotWidth  = 880 // pixels for the run's whole time span
	labelWidth = 300 // pixels for the lane names
	axisHeight = 24
	histBarW   = 22
	histHeight = 120
	histTop    = 16 // room for the count above the tallest bar
	// labelEvery bars at least between two axis labels: a label ("800µs")
	// is up to three bars wide.
	labelEvery = 3
)

// result names how a call ended, as the page's legend does.
func result(r Record) string {
	switch {
	case r.TimedOut:
		return "timed out"
	case r.Code == codes.OK:
		return "OK"
	}
	return r.Code.String()
}

// laneKey groups a call with the others of the same volume of the same
// pod; calls for no volume (registration, node info) by their operation.
func laneKey(r Record) string {
	if r.Labels.Volume != "" {
		return strings.TrimSpace(r.Labels.Pod + " " + r.Labels.Volume)
	}
	k := strings.TrimSpace(r.Labels.Component + " " + r.Labels.Operation)
	if k == "" {
		return r.Method
	}
	return k
}

type page struct {
	Title     string
	Header    Header
	Story     *story // the pod's story, on a run's page
	Sum       Summary
	Drawn     int
	Seen      int64
	Capped    bool
	Legend    []legendItem
	Timeline  timeline
	Histos    []histo
	Generated string
}

type legendItem struct {
	Name, Color string
	Error       bool // the mark of a failed call, not a method
}

type timeline struct {
	Width, Height, LaneH, PlotX, PlotW int
	BarY, BarH                         float64 // a bar's place within its lane
	Labels                             bool
	Ticks                              []tick
	Lanes                              []lane
}

type tick struct {
	X     float64
	T     float64 // µs from the start, for the zoom
	Label string
}

type lane struct {
	first       time.Time
	pod, volume string
	Key         string
	Short       string
	Y           int
	Bars        []bar
}

type bar struct {
	X, W  float64
	S, D  float64 // start (from the run's start) and duration in µs, for the zoom
	Color string
	Title string
	Res   string
	Err   bool
}

type histo struct {
	Method               string
	Calls                int64
	P50, P90, P99, Max   float64
	Width, Height, Baseh int
	Bars                 []histBar
}

type histBar struct {
	X, Y, H      float64
	Count        int64
	Label, Title string
	LabelX, CntY float64
}

// WriteHTML writes one self-contained page (inline CSS, SVG and a few
// lines of script; nothing fetched) with the run's summary, a timeline of
// the recorded calls with one lane per volume, and a latency histogram per
// method. The histograms and the table count every call of the summary;
// the timeline draws the calls the Recorder kept and says so when it kept
// fewer than it saw.
func WriteHTML(w io.Writer, title string, rec Recorded, sum Summary) error {
	return WriteHTMLWithHeader(w, title, Header{}, rec, sum)
}

// WriteHTMLWithHeader is WriteHTML with what ran against what, and the
// verdict, at the top of the page.
func WriteHTMLWithHeader(w io.Writer, title string, hdr Header, rec Recorded, sum Summary) error {
	p := page{
		Title:     title,
		Header:    hdr,
		Sum:       sum,
		Drawn:     len(rec.Records),
		Seen:      max(rec.Seen, int64(len(rec.Records))),
		Generated: time.Now().UTC().Format(time.RFC3339),
	}
	p.Capped = p.Seen > int64(p.Drawn)
	if hdr.Command == "run" {
		p.Story = drawStory(rec.Records)
	}
	p.Timeline, p.Legend = drawTimeline(rec.Records)
	p.Histos = drawHistograms(sum)
	if err := pageTemplate().Execute(w, p); err != nil {
		return fmt.Errorf("write the HTML report: %w", err)
	}
	return nil
}

func drawTimeline(recs []Record) (timeline, []legendItem) {
	tl := timeline{PlotX: labelWidth, PlotW: plotWidth, Width: labelWidth + plotWidth + 10}
	if len(recs) == 0 {
		tl.Height = axisHeight
		return tl, nil
	}
	first, last := recs[0].Start, recs[0].Start.Add(recs[0].Duration)
	for _, r := range recs {
		if r.Start.Before(first) {
			first = r.Start
		}
		if e := r.Start.Add(r.Duration); e.After(last) {
			last = e
		}
	}
	span := max(last.Sub(first), time.Microsecond)
	scale := float64(plotWidth) / float64(span)

	byKey := map[string]*lane{}
	var order []*lane
	seenMethods, failed := map[string]bool{}, false
	for _, r := range recs {
		k := laneKey(r)
		l := byKey[k]
		if l == nil {
			l = &lane{Key: k, Short: shorten(k, 44), first: r.Start, pod: r.Labels.Pod, volume: r.Labels.Volume}
			byKey[k] = l
			order = append(order, l)
		}
		if r.Start.Before(l.first) {
			l.first = r.Start
		}
		res := result(r)
		seenMethods[r.Method] = true
		failed = failed || res != "OK"
		x := float64(labelWidth) + float64(r.Start.Sub(first))*scale
		title := fmt.Sprintf("#%d %s (%s): %s\npod %s, volume %s\nstarted at +%s, took %s",
			r.Seq, r.Method, r.Labels.Operation, res, orDash(r.Labels.Pod), orDash(r.Labels.Volume),
			fmtDur(r.Start.Sub(first)), fmtDur(r.Duration))
		if r.Err != "" {
			title += "\nerror: " + r.Err
		}
		l.Bars = append(l.Bars, bar{
			X: round1(x), W: round1(math.Max(1, float64(r.Duration)*scale)),
			S: float64(r.Start.Sub(first).Microseconds()), D: float64(r.Duration.Microseconds()),
			Color: methodColor(r.Method), Res: res, Err: res != "OK", Title: title,
		})
	}
	order = arrangeLanes(order)
	tl.LaneH = laneHeight(len(order))
	tl.Labels = tl.LaneH >= 10
	tl.BarY = float64(tl.LaneH) / 8
	tl.BarH = float64(tl.LaneH) * 3 / 4
	for i, l := range order {
		l.Y = axisHeight + i*tl.LaneH
		tl.Lanes = append(tl.Lanes, *l)
	}
	tl.Height = axisHeight + len(order)*tl.LaneH + 4
	tl.Ticks = ticks(span, scale)
	return tl, legend(seenMethods, failed)
}

// arrangeLanes folds a volume's calls made for no pod (UnmountDevice:
// the kubelet unstages a volume, not a pod's volume) into the lane of the
// volume's pod when only one pod uses it, and orders the lanes by when
// their volume was first used (calls arrive as they end), a volume's lanes
// together: the run reads top down.
func arrangeLanes(lanes []*lane) []*lane {
	podLanes := map[string][]*lane{}
	for _, l := range lanes {
		if l.volume != "" && l.pod != "" {
			podLanes[l.volume] = append(podLanes[l.volume], l)
		}
	}
	var kept []*lane
	for _, l := range lanes {
		if only := podLanes[l.volume]; l.volume != "" && l.pod == "" && len(only) == 1 {
			only[0].Bars = append(only[0].Bars, l.Bars...)
			if l.first.Before(only[0].first) {
				only[0].first = l.first
			}
			continue
		}
		kept = append(kept, l)
	}
	group := func(l *lane) string {
		if l.volume != "" {
			return l.volume
		}
		return l.Key
	}
	groupFirst := map[string]time.Time{}
	for _, l := range kept {
		g := group(l)
		if f, ok := groupFirst[g]; !ok || l.first.Before(f) {
			groupFirst[g] = l.first
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		a, b := kept[i], kept[j]
		ga, gb := group(a), group(b)
		switch {
		case !groupFirst[ga].Equal(groupFirst[gb]):
			return groupFirst[ga].Before(groupFirst[gb])
		case ga != gb:
			return ga < gb
		}
		return a.first.Before(b.first)
	})
	return kept
}

// laneHeight keeps a few thousand lanes on a page a person can scroll.
func laneHeight(lanes int) int {
	switch {
	case lanes <= 400:
		return 16
	case lanes <= 2000:
		return 8
	}
	return 4
}

// legend names the methods' colours, in the order a volume's life calls
// them (nodeOrder),
// then the mark of a failed call when there is one.
func legend(seen map[string]bool, failed bool) []legendItem {
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	rank := func(m string) int {
		for i, k := range nodeOrder {
			if k == m {
				return i
			}
		}
		return len(nodeOrder)
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	out := make([]legendItem, 0, len(names)+1)
	for _, n := range names {
		out = append(out, legendItem{Name: n, Color: methodColor(n)})
	}
	if failed {
		out = append(out, legendItem{Name: "failed or timed out (red outline)", Color: errorColor, Error: true})
	}
	return out
}

// errorColor outlines a failed call's bar.
const errorColor = "#d62728"

// ticks are about ten 1-2-5 steps over the span.
func ticks(span time.Duration, scale float64) []tick {
	step := time.Microsecond
	for i := 0; step*10 < span; i++ {
		// 1, 2, 5, 10, 20, 50, ...
		if i%3 == 1 {
			step = step * 5 / 2
		} else {
			step *= 2
		}
	}
	var out []tick
	for t := time.Duration(0); t <= span; t += step {
		label := fmtDur(t)
		if t == 0 {
			label = "0"
		}
		out = append(out, tick{X: round1(float64(labelWidth) + float64(t)*scale), T: float64(t.Microseconds()), Label: label})
	}
	return out
}

func drawHistograms(sum Summary) []histo {
	var out []histo
	base := float64(histTop + histHeight)
	for _, m := range sum.Methods {
		h := histo{
			Method: m.Method, Calls: m.Calls,
			P50: m.Latency.P50, P90: m.Latency.P90, P99: m.Latency.P99, Max: m.Latency.Max,
			Baseh: int(base),
		}
		var most int64 = 1
		for _, b := range m.Histogram {
			most = max(most, b.Count)
		}
		lastLabel := -labelEvery
		for i, b := range m.Histogram {
			bh := float64(b.Count) / float64(most) * histHeight
			if b.Count > 0 {
				bh = math.Max(1, bh)
			}
			x := float64(24 + i*histBarW)
			hb := histBar{
				X: x, Y: round1(base - bh), H: round1(bh), Count: b.Count,
				LabelX: x + histBarW/2 - 1, CntY: round1(base - bh - 3),
				Title: fmt.Sprintf("%s: %s took %s to %s", m.Method, plural(b.Count, "call"), fmtMS(b.FromMS), fmtMS(b.ToMS)),
			}
			// Edges at 1, 2 and 5 are named, far enough apart that two
			// labels never touch; the bars between are read off them.
			if (isOneTwoFive(b.FromMS) || i == 0) && i-lastLabel >= labelEvery {
				hb.Label = strings.NewReplacer(".00s", "s", ".0s", "s", ".0ms", "ms").Replace(fmtMS(b.FromMS))
				lastLabel = i
			}
			h.Bars = append(h.Bars, hb)
		}
		h.Width = max(60+len(m.Histogram)*histBarW, 260)
		h.Height = int(base) + 20
		out = append(out, h)
	}
	return out
}

// isOneTwoFive: ms is 1, 2 or 5 times a power of ten.
func isOneTwoFive(ms float64) bool {
	us := ms * 1000
	for us >= 10 {
		us /= 10
	}
	return math.Abs(us-1) < 1e-6 || math.Abs(us-2) < 1e-6 || math.Abs(us-5) < 1e-6
}
