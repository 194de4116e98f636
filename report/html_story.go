package report

import (
	"fmt"
	"time"
)

// A run's page tells the pod's story as one sequence on one time axis:
// registration, stage, publish, running, teardown, with the republish and
// stats rounds of the running pod marked where they happened.

type story struct {
	Width, Height int
	Phases        []storyPhase
	Marks         []storyMark
	Ticks         []tick
}

type storyPhase struct {
	Name, Color, Title string
	X, W               float64
}

type storyMark struct {
	Kind, Title, Color string
	X                  float64
}

// phaseOf sorts a call into the pod's story; "" for a round of the
// running pod (marked, not a phase) or a call of no phase.
func phaseOf(r Record, published bool) string {
	switch r.Method {
	case "GetPluginInfo", "NodeGetInfo", "GetPluginCapabilities", "Probe":
		return "registration"
	case "NodeStageVolume", "ControllerPublishVolume":
		return "stage"
	case "NodePublishVolume":
		if published {
			return "" // a republish
		}
		return "publish"
	case "NodeUnpublishVolume", "NodeUnstageVolume":
		return "teardown"
	}
	if r.Labels.Component == "registrar" || r.Labels.Operation == "RegisterPlugin" {
		return "registration"
	}
	return ""
}

var storyColors = map[string]string{
	"registration": "#8c8c8c", "stage": "#3182bd", "publish": "#31a354", "running": "#c7e9c0", "teardown": "#fd8d3c",
}

// drawStory lays the phases out on the run's time axis; nil without calls.
func drawStory(recs []Record) *story {
	if len(recs) == 0 {
		return nil
	}
	first, last := recs[0].Start, recs[0].Start.Add(recs[0].Duration)
	for _, r := range recs {
		first = minTime(first, r.Start)
		last = maxTime(last, r.Start.Add(r.Duration))
	}
	span := max(last.Sub(first), time.Microsecond)
	scale := float64(plotWidth) / float64(span)
	x := func(t time.Time) float64 { return round1(float64(labelWidth) + float64(t.Sub(first))*scale) }

	type extent struct{ from, to time.Time }
	ext := map[string]*extent{}
	published := map[string]bool{}
	s := &story{Width: labelWidth + plotWidth + 10, Height: 54, Ticks: ticks(span, scale)}
	for _, r := range recs {
		vol := r.Labels.Pod + " " + r.Labels.Volume
		ph := phaseOf(r, published[vol])
		if r.Method == "NodePublishVolume" {
			published[vol] = true
		}
		if ph == "" {
			s.mark(r, x(r.Start))
			continue
		}
		e := ext[ph]
		if e == nil {
			e = &extent{r.Start, r.Start.Add(r.Duration)}
			ext[ph] = e
		}
		e.from, e.to = minTime(e.from, r.Start), maxTime(e.to, r.Start.Add(r.Duration))
	}
	if p, t := ext["publish"], ext["teardown"]; p != nil && t != nil && t.from.After(p.to) {
		ext["running"] = &extent{p.to, t.from}
	}
	for _, name := range []string{"registration", "stage", "publish", "running", "teardown"} {
		e := ext[name]
		if e == nil {
			continue
		}
		w := max(x(e.to)-x(e.from), 2)
		s.Phases = append(s.Phases, storyPhase{Name: name, Color: storyColors[name], X: x(e.from), W: round1(w),
			Title: fmt.Sprintf("%s: +%s to +%s (%s)", name, fmtDur(e.from.Sub(first)), fmtDur(e.to.Sub(first)), fmtDur(e.to.Sub(e.from)))})
	}
	return s
}

// mark places a round of the running pod: a republish, a stats round, an
// expansion, or another call.
func (s *story) mark(r Record, x float64) {
	kind := map[string]string{"NodePublishVolume": "republish", "NodeGetVolumeStats": "stats", "NodeExpandVolume": "expand"}[r.Method]
	if kind == "" {
		return
	}
	color := map[string]string{"republish": "#006d2c", "stats": "#e7ba52", "expand": "#17becf"}[kind]
	title := fmt.Sprintf("%s: %s (%s), took %s", kind, r.Method, result(r), fmtDur(r.Duration))
	if result(r) != "OK" {
		color = errorColor
	}
	s.Marks = append(s.Marks, storyMark{Kind: kind, Title: title, Color: color, X: x})
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
