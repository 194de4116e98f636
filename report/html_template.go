package report

import "html/template"

// pageTemplate is the whole page. html/template escapes every name that
// comes from the run (pods, volumes, the title).
var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"mib":      func(b int64) float64 { return float64(b) / (1 << 20) },
	"add":      func(a, b int) int { return a + b },
	"subtract": func(a, b int) int { return a - b },
}).Parse(`<!DOCTYPE html>
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
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">{{.Sum.Calls}} calls in {{printf "%.3f" .Sum.WallSeconds}} s{{if .Sum.Calls}} from {{.Sum.Start.Format "2006-01-02 15:04:05.000 UTC"}}{{end}},
{{printf "%.1f" .Sum.CallsPerSecond}} calls/s, at most {{.Sum.MaxInFlight}} in flight at once, {{.Sum.Errors}} errors ({{.Sum.TimedOut}} timed out).
The simulator itself: CPU {{printf "%.3f" .Sum.Process.CPUSeconds}} s, peak RSS {{printf "%.1f" (mib .Sum.Process.PeakRSSBytes)}} MiB. Generated {{.Generated}}.</p>
{{if .Capped}}<p class="warn" id="capped">The timeline draws the first {{.Drawn}} of the run's {{.Seen}} calls; the table and the histograms count them all.</p>{{end}}

<h2>Calls per method</h2>
<table class="sum" id="summary">
<tr><th>method</th><th>calls</th><th>errors</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>max ms</th><th>calls/s</th><th>in flight</th><th>errors by code</th></tr>
{{range .Sum.Methods}}<tr><td>{{.Method}}</td><td>{{.Calls}}</td><td>{{.ErrorCount}}</td><td>{{printf "%.1f" .Latency.P50}}</td><td>{{printf "%.1f" .Latency.P90}}</td><td>{{printf "%.1f" .Latency.P99}}</td><td>{{printf "%.1f" .Latency.Max}}</td><td>{{printf "%.1f" .CallsPerSecond}}</td><td>{{.MaxInFlight}}</td><td>{{range $code, $n := .Errors}}{{$code}} ×{{$n}} {{end}}</td></tr>
{{end}}<tr class="total"><td>total</td><td>{{.Sum.Calls}}</td><td>{{.Sum.Errors}}</td><td></td><td></td><td></td><td></td><td>{{printf "%.1f" .Sum.CallsPerSecond}}</td><td>{{.Sum.MaxInFlight}}</td><td></td></tr>
</table>

<h2>Timeline</h2>
<p class="legend">{{range .Legend}}<span><i style="background: {{.Color}}"></i>{{.Name}}</span>{{end}}</p>
<p>One lane per volume of a pod (with the volume's unstage when one pod uses it; calls for no volume by their operation), each call a bar from its start to its end; hover a bar for its details.
<label>Show lanes matching <input id="filter" type="search" placeholder="pod or volume name"></label></p>
<div class="timeline">
<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Timeline.Width}}" height="{{.Timeline.Height}}">
<g class="axis">{{range .Timeline.Ticks}}<line x1="{{.X}}" x2="{{.X}}" y1="16" y2="100%"></line><text x="{{.X}}" y="12" text-anchor="middle">{{.Label}}</text>{{end}}</g>
{{$lh := .Timeline.LaneH}}{{$labels := .Timeline.Labels}}{{$w := .Timeline.Width}}{{$by := .Timeline.BarY}}{{$bh := .Timeline.BarH}}
{{range .Timeline.Lanes}}<g class="lane" data-key="{{.Key}}" transform="translate(0,{{.Y}})"><title>{{.Key}}</title><rect class="bg" x="0" y="0" width="{{$w}}" height="{{$lh}}"></rect>{{if $labels}}<text x="4" y="{{subtract $lh 4}}">{{.Short}}</text>{{end}}{{range .Bars}}<rect class="bar" data-result="{{.Res}}" x="{{.X}}" y="{{$by}}" width="{{.W}}" height="{{$bh}}" fill="{{.Color}}"><title>{{.Title}}</title></rect>{{end}}</g>
{{end}}</svg>
</div>

<h2>Latency per method</h2>
<div class="hists">
{{range .Histos}}<section class="hist" data-method="{{.Method}}">
<h3>{{.Method}}</h3>
<p>{{.Calls}} call{{if ne .Calls 1}}s{{end}}; p50 {{printf "%.1f" .P50}} ms, p90 {{printf "%.1f" .P90}} ms, p99 {{printf "%.1f" .P99}} ms, max {{printf "%.1f" .Max}} ms</p>
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}">{{$base := .Baseh}}
{{range .Bars}}<rect class="hbar" x="{{.X}}" y="{{.Y}}" width="20" height="{{.H}}"><title>{{.Title}}</title></rect><text x="{{.LabelX}}" y="{{.CntY}}" text-anchor="middle">{{.Count}}</text>{{if .Label}}<text x="{{.LabelX}}" y="{{add $base 14}}" text-anchor="middle">{{.Label}}</text>{{end}}
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
  // A marker the browser test reads: what the page holds once drawn.
  var m = document.createElement("div");
  m.id = "rendered";
  m.hidden = true;
  m.setAttribute("data-lanes", lanes.length);
  m.setAttribute("data-bars", svg.querySelectorAll("rect.bar").length);
  m.setAttribute("data-hists", document.querySelectorAll("section.hist").length);
  m.setAttribute("data-errors", errors.join("; "));
  document.body.appendChild(m);
})();
</script>
</body>
</html>
`))
