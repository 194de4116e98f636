package report

import (
	"html/template"
	"sync"
)

// pageTemplate is the whole page. html/template escapes every name that
// comes from the run (pods, volumes, the title, error texts). It is parsed
// the first time a page is written, not when the program starts: most
// runs write none.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"mib":      func(b int64) float64 { return float64(b) / (1 << 20) },
		"add":      func(a, b int) int { return a + b },
		"subtract": func(a, b int) int { return a - b },
		"plural":   plural,
	}).Parse(pageHTML))
})

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.5em; margin: 0 0 .2em; }
h2 { font-size: 1.2em; margin: 1.6em 0 .5em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1em; margin: 1em 0 .2em; }
.meta { color: #555; }
.warn { background: #fff4d6; border: 1px solid #e0b84c; padding: .4em .7em; display: inline-block; }
table.sum { border-collapse: collapse; font-variant-numeric: tabular-nums; }
table.sum th, table.sum td { padding: .2em .7em; border-bottom: 1px solid #eee; text-align: right; }
table.sum th:first-child, table.sum td:first-child { text-align: left; }
table.sum tr.total td { font-weight: 600; border-top: 1px solid #999; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: .9em; height: .9em; vertical-align: -.1em; margin-right: .3em; border-radius: 2px; }
.timeline { overflow: auto; max-height: 80vh; border: 1px solid #ddd; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg .axis line { stroke: #e4e4e4; }
svg .lane:nth-child(even) .bg { fill: #f7f7f7; }
svg .lane .bg { fill: #fff; }
svg rect.bar { stroke: #fff; stroke-width: .5; }
svg rect.bar:hover { stroke: #000; stroke-width: 1; }
.hists { display: flex; flex-wrap: wrap; gap: 1.5em; }
section.hist { border: 1px solid #eee; padding: .3em .8em; }
section.hist p { margin: .2em 0; color: #555; font-variant-numeric: tabular-nums; }
svg .hbar { fill: #4a78b5; }
svg .hbar:hover { fill: #23466f; }
input#filter { font: inherit; padding: .2em .4em; width: 22em; }
table.ran { border-collapse: collapse; margin: .3em 0 .6em; }
table.ran th { text-align: left; font-weight: 600; padding: .1em 1em .1em 0; color: #555; }
table.ran td { padding: .1em 0; overflow-wrap: anywhere; }
.verdict { font-size: 1.15em; font-weight: 600; padding: .4em .7em; border-radius: 4px; display: inline-block; margin: .2em 0; }
.verdict.ok { background: #e3f4e8; color: #1d6b36; border: 1px solid #8cc9a0; }
.verdict.failed { background: #fde5e5; color: #9b1c1c; border: 1px solid #e39b9b; }
svg rect.bar.err { stroke: #d62728; stroke-width: 2; }
.legend i.err { background: #fff !important; border: 2px solid #d62728; box-sizing: border-box; }
.zoom button { font: inherit; padding: 0 .5em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{with .Header}}{{if .Verdict}}<p id="verdict" class="verdict {{if .Failed}}failed{{else}}ok{{end}}">{{if .Failed}}FAILED: {{else}}Verdict: {{end}}{{.Verdict}}</p>
<p id="left-behind"><b>Left behind:</b> {{if .LeftBehind}}{{.LeftBehind}}{{else}}nothing{{end}}</p>{{end}}
<table class="ran" id="ran">
{{if .Command}}<tr><th>command</th><td>{{.Command}}</td></tr>{{end}}
<tr><th>driver</th><td id="driver">{{if .Driver}}{{.Driver}}{{if .DriverVersion}} {{.DriverVersion}}{{end}}{{else}}(not registered){{end}}</td></tr>
<tr><th>endpoint</th><td id="endpoint">{{if .Endpoint}}{{.Endpoint}}{{else}}-{{end}}</td></tr>
<tr><th>node</th><td id="node">{{if .Node}}{{.Node}}{{else}}-{{end}}</td></tr>
<tr><th>kubelet</th><td id="kubelet">{{if .Kubelet}}{{.Kubelet}}{{else}}-{{end}}</td></tr>
<tr><th>feature gates</th><td id="gates">{{if .Gates}}{{.Gates}}{{else}}the release's defaults{{end}}</td></tr>
{{if .APIIdentity}}<tr><th>API server</th><td id="api-identity">the driver is {{.APIIdentity}}</td></tr>{{end}}
</table>
{{if .APIRequests}}<details id="api-requests"><summary>The driver's API requests ({{len .APIRequests}})</summary><ul>{{range .APIRequests}}<li>{{.}}</li>{{end}}</ul></details>{{end}}{{end}}
<p class="meta">{{plural .Sum.Calls "call"}} in {{printf "%.3f" .Sum.WallSeconds}} s{{if .Sum.Calls}} from {{.Sum.Start.Format "2006-01-02 15:04:05.000 UTC"}}{{end}},
{{printf "%.1f" .Sum.CallsPerSecond}} calls/s, at most {{.Sum.MaxInFlight}} in flight at once, {{plural .Sum.Errors "error"}} ({{.Sum.TimedOut}} timed out).
The simulator itself: CPU {{printf "%.3f" .Sum.Process.CPUSeconds}} s, peak RSS {{printf "%.1f" (mib .Sum.Process.PeakRSSBytes)}} MiB. Generated {{.Generated}}.</p>
{{if .Capped}}<p class="warn" id="capped">The timeline draws the first {{.Drawn}} of the run's {{.Seen}} calls; the table and the histograms count them all.</p>{{end}}

{{with .Story}}<h2>The pod's story</h2>
<p>Registration, stage, publish, the running pod and its teardown on one time axis; the running pod's republish and stats rounds are marked where they happened (hover for each).</p>
<p class="legend" id="story-legend">{{range .Phases}}<span><i style="background: {{.Color}}"></i>{{.Name}}</span>{{end}}{{if .Marks}}<span>▲ republish (dark green), stats (yellow), expand (blue); red: failed</span>{{end}}</p>
<svg id="story" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}">
<g class="axis">{{range .Ticks}}<line x1="{{.X}}" x2="{{.X}}" y1="16" y2="100%"></line><text x="{{.X}}" y="12" text-anchor="middle">{{.Label}}</text>{{end}}</g>
{{range .Phases}}<g class="phase" data-phase="{{.Name}}"><rect x="{{.X}}" y="22" width="{{.W}}" height="20" fill="{{.Color}}"><title>{{.Title}}</title></rect></g>
{{end}}{{range .Marks}}<path class="round" data-kind="{{.Kind}}" d="M{{.X}} 44 l-4 7 h8 z" fill="{{.Color}}"><title>{{.Title}}</title></path>
{{end}}</svg>
{{end}}
<h2>Calls per method</h2>
<table class="sum" id="summary">
<tr><th>method</th><th>calls</th><th>errors</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>max ms</th><th>calls/s</th><th>in flight</th><th>errors by code</th></tr>
{{range .Sum.Methods}}<tr><td>{{.Method}}</td><td>{{.Calls}}</td><td>{{.ErrorCount}}</td><td>{{printf "%.1f" .Latency.P50}}</td><td>{{printf "%.1f" .Latency.P90}}</td><td>{{printf "%.1f" .Latency.P99}}</td><td>{{printf "%.1f" .Latency.Max}}</td><td>{{printf "%.1f" .CallsPerSecond}}</td><td>{{.MaxInFlight}}</td><td>{{range $code, $n := .Errors}}{{$code}} ×{{$n}} {{end}}</td></tr>
{{end}}<tr class="total"><td>total</td><td>{{.Sum.Calls}}</td><td>{{.Sum.Errors}}</td><td></td><td></td><td></td><td></td><td>{{printf "%.1f" .Sum.CallsPerSecond}}</td><td>{{.Sum.MaxInFlight}}</td><td></td></tr>
</table>

<h2>Timeline</h2>
<p class="legend" id="legend">{{range .Legend}}<span{{if .Error}} class="err"{{end}}><i{{if .Error}} class="err"{{end}} style="background: {{.Color}}"></i>{{.Name}}</span>{{end}}</p>
<p>One lane per volume of a pod (with the volume's unstage when one pod uses it; calls for no volume by their operation), each call a bar from its start to its end; hover a bar for its details.
<label>Show lanes matching <input id="filter" type="search" placeholder="pod or volume name"></label>
<span class="zoom">zoom <button id="zoom-out" type="button">−</button> <button id="zoom-fit" type="button">fit</button> <button id="zoom-in" type="button">+</button> <span id="zoom-level">1×</span></span></p>
<div class="timeline">
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Timeline.Width}}" height="{{.Timeline.Height}}">
<g class="axis">{{range .Timeline.Ticks}}<g class="tick" data-t="{{.T}}"><line x1="{{.X}}" x2="{{.X}}" y1="16" y2="100%"></line><text x="{{.X}}" y="12" text-anchor="middle">{{.Label}}</text></g>{{end}}</g>
{{$lh := .Timeline.LaneH}}{{$labels := .Timeline.Labels}}{{$w := .Timeline.Width}}{{$by := .Timeline.BarY}}{{$bh := .Timeline.BarH}}
{{range .Timeline.Lanes}}<g class="lane" data-key="{{.Key}}" transform="translate(0,{{.Y}})"><title>{{.Key}}</title><rect class="bg" x="0" y="0" width="{{$w}}" height="{{$lh}}"></rect>{{if $labels}}<text x="4" y="{{subtract $lh 4}}">{{.Short}}</text>{{end}}{{range .Bars}}<rect class="bar{{if .Err}} err{{end}}" data-result="{{.Res}}" data-s="{{.S}}" data-d="{{.D}}" x="{{.X}}" y="{{$by}}" width="{{.W}}" height="{{$bh}}" fill="{{.Color}}"><title>{{.Title}}</title></rect>{{end}}</g>
{{end}}</svg>
</div>

<h2>Latency per method</h2>
<div class="hists">
{{range .Histos}}<section class="hist" data-method="{{.Method}}">
<h3>{{.Method}}</h3>
<p>{{plural .Calls "call"}}; p50 {{printf "%.1f" .P50}} ms, p90 {{printf "%.1f" .P90}} ms, p99 {{printf "%.1f" .P99}} ms, max {{printf "%.1f" .Max}} ms</p>
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}">{{$base := .Baseh}}
<line x1="22" x2="{{subtract .Width 10}}" y1="{{$base}}" y2="{{$base}}" stroke="#999"></line>
{{range .Bars}}<rect class="hbar" x="{{.X}}" y="{{.Y}}" width="20" height="{{.H}}"><title>{{.Title}}</title></rect>{{if .Count}}<text x="{{.LabelX}}" y="{{.CntY}}" text-anchor="middle">{{.Count}}</text>{{end}}{{if .Label}}<line x1="{{.X}}" x2="{{.X}}" y1="{{$base}}" y2="{{add $base 4}}" stroke="#999"></line><text class="xlabel" x="{{.X}}" y="{{add $base 15}}" text-anchor="middle">{{.Label}}</text>{{end}}
{{end}}</svg>
</section>
{{end}}</div>

<script>
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) { errors.push(String(e.message)); });
  var svg = document.getElementById("timeline");
  var lanes = Array.prototype.slice.call(svg.querySelectorAll("g.lane"));
  var laneH = {{.Timeline.LaneH}}, top = 24;
  // Filtering hides the lanes that do not match and packs the rest.
  document.getElementById("filter").addEventListener("input", function (ev) {
    var q = ev.target.value.toLowerCase(), y = top;
    lanes.forEach(function (g) {
      var show = g.getAttribute("data-key").toLowerCase().indexOf(q) >= 0;
      g.style.display = show ? "" : "none";
      if (show) { g.setAttribute("transform", "translate(0," + y + ")"); y += laneH; }
    });
    svg.setAttribute("height", y + 4);
  });
  // Zoom widens the plot (the labels stay): bars and ticks are placed
  // again from their start and duration.
  var plotX = {{.Timeline.PlotX}}, plotW = {{.Timeline.PlotW}}, zoom = 1;
  var spanUS = 0;
  svg.querySelectorAll("rect.bar").forEach(function (b) {
    spanUS = Math.max(spanUS, +b.getAttribute("data-s") + +b.getAttribute("data-d"));
  });
  function place() {
    var scale = plotW * zoom / Math.max(spanUS, 1);
    svg.querySelectorAll("rect.bar").forEach(function (b) {
      b.setAttribute("x", (plotX + b.getAttribute("data-s") * scale).toFixed(1));
      b.setAttribute("width", Math.max(1, b.getAttribute("data-d") * scale).toFixed(1));
    });
    svg.querySelectorAll("g.tick").forEach(function (t) {
      var x = (plotX + t.getAttribute("data-t") * scale).toFixed(1);
      var l = t.querySelector("line"), s = t.querySelector("text");
      l.setAttribute("x1", x); l.setAttribute("x2", x); s.setAttribute("x", x);
    });
    var w = plotX + plotW * zoom + 10;
    svg.setAttribute("width", w);
    svg.querySelectorAll("rect.bg").forEach(function (r) { r.setAttribute("width", w); });
    document.getElementById("zoom-level").textContent = zoom + "×";
  }
  document.getElementById("zoom-in").addEventListener("click", function () { zoom = Math.min(zoom * 2, 256); place(); });
  document.getElementById("zoom-out").addEventListener("click", function () { zoom = Math.max(zoom / 2, 1); place(); });
  document.getElementById("zoom-fit").addEventListener("click", function () { zoom = 1; place(); });
  // #zoom=N opens the page zoomed in (a link to a close-up).
  var zm = /zoom=(\d+)/.exec(location.hash);
  if (zm) { zoom = Math.min(Math.max(+zm[1], 1), 256); place(); }
  // Axis labels that touch, counted for the browser test.
  var overlaps = 0;
  document.querySelectorAll("section.hist svg").forEach(function (h) {
    var boxes = Array.prototype.map.call(h.querySelectorAll("text.xlabel"), function (t) { return t.getBBox(); });
    for (var i = 1; i < boxes.length; i++) {
      if (boxes[i].x < boxes[i - 1].x + boxes[i - 1].width + 2) { overlaps++; }
    }
  });
  // A marker the browser test reads: what the page holds once drawn.
  var m = document.createElement("div");
  m.id = "rendered";
  m.hidden = true;
  m.setAttribute("data-lanes", lanes.length);
  m.setAttribute("data-bars", svg.querySelectorAll("rect.bar").length);
  m.setAttribute("data-hists", document.querySelectorAll("section.hist").length);
  m.setAttribute("data-svg-width", Math.round(svg.getBoundingClientRect().width));
  var box = svg.parentNode;
  m.setAttribute("data-overflow", box.scrollWidth - box.clientWidth);
  m.setAttribute("data-page-overflow", document.documentElement.scrollWidth - document.documentElement.clientWidth);
  m.setAttribute("data-label-overlaps", overlaps);
  m.setAttribute("data-window-width", window.innerWidth);
  m.setAttribute("data-errors", errors.join("; "));
  document.body.appendChild(m);
})();
</script>
</body>
</html>
`
