package report

import (
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// ScenarioRow is one conformance scenario on the page: its result, what
// failed and the calls it made, the failed ones marked.
type ScenarioRow struct {
	Name     string
	Result   string // PASS, FAIL or SKIP
	Duration time.Duration
	Message  string // the skip's reason
	Failures []string
	Calls    []ScenarioCall
}

// ScenarioCall is one call of a scenario.
type ScenarioCall struct {
	Method, Operation, Result, Err string
	Duration                       time.Duration
	Failed                         bool // the call failed: the one to look at
}

// WriteConformanceHTML writes the page of a conformance run: the header
// (driver, endpoint, node, release, verdict) and one row per scenario,
// a failed scenario opened on its failures and calls.
func WriteConformanceHTML(w io.Writer, title string, hdr Header, rows []ScenarioRow) error {
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Result]++
	}
	p := struct {
		Title     string
		Header    Header
		Rows      []ScenarioRow
		Counts    map[string]int
		Generated string
	}{title, hdr, rows, counts, time.Now().UTC().Format(time.RFC3339)}
	if err := conformanceTemplate().Execute(w, p); err != nil {
		return fmt.Errorf("write the HTML report: %w", err)
	}
	return nil
}

// conformanceTemplate is parsed the first time a page is written.
var conformanceTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("conformance").Funcs(template.FuncMap{
		"dur":    fmtDur,
		"plural": plural,
		"lower":  func(s string) string { return map[string]string{"PASS": "pass", "FAIL": "fail", "SKIP": "skip"}[s] },
	}).Parse(conformanceHTML))
})

const conformanceHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em; color: #1b1b1b; background: #fff; max-width: 1200px; }
h1 { font-size: 1.5em; margin: 0 0 .2em; }
table.ran { border-collapse: collapse; margin: .3em 0 .6em; }
table.ran th { text-align: left; font-weight: 600; padding: .1em 1em .1em 0; color: #555; }
table.ran td { padding: .1em 0; overflow-wrap: anywhere; }
#gates { word-break: break-all; }
.verdict { font-size: 1.15em; font-weight: 600; padding: .4em .7em; border-radius: 4px; display: inline-block; margin: .2em 0; }
.verdict.ok { background: #e3f4e8; color: #1d6b36; border: 1px solid #8cc9a0; }
.verdict.failed { background: #fde5e5; color: #9b1c1c; border: 1px solid #e39b9b; }
table.scen { border-collapse: collapse; width: 100%; }
table.scen > tbody > tr > td, table.scen th { padding: .25em .6em; border-bottom: 1px solid #eee; vertical-align: top; text-align: left; }
.res { font-weight: 700; width: 3.5em; }
tr.pass .res { color: #1d6b36; } tr.fail .res { color: #b2182b; } tr.skip .res { color: #8a6d00; }
tr.fail { background: #fff6f6; }
.why { color: #555; }
table.calls { border-collapse: collapse; margin: .3em 0; font-size: .92em; }
table.calls td { padding: .05em .6em .05em 0; }
table.calls tr.failed { background: #fde5e5; font-weight: 600; }
ul.failures { margin: .2em 0 .2em 1.2em; padding: 0; color: #9b1c1c; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{with .Header}}<p id="verdict" class="verdict {{if .Failed}}failed{{else}}ok{{end}}">{{if .Failed}}FAILED: {{else}}Verdict: {{end}}{{.Verdict}}</p>
<p id="left-behind"><b>Left behind:</b> {{if .LeftBehind}}{{.LeftBehind}}{{else}}nothing{{end}}</p>
<table class="ran" id="ran">
<tr><th>driver</th><td id="driver">{{.Driver}}{{if .DriverVersion}} {{.DriverVersion}}{{end}}</td></tr>
<tr><th>endpoint</th><td id="endpoint">{{.Endpoint}}</td></tr>
<tr><th>node</th><td id="node">{{.Node}}</td></tr>
<tr><th>kubelet</th><td id="kubelet">{{.Kubelet}}</td></tr>
<tr><th>feature gates</th><td id="gates">{{if .Gates}}{{.Gates}}{{else}}the release's defaults{{end}}</td></tr>
</table>{{end}}
<p id="counts">{{index .Counts "PASS"}} passed, {{index .Counts "FAIL"}} failed, {{index .Counts "SKIP"}} skipped. Generated {{.Generated}}.</p>
<table class="scen" id="scenarios">
<tr><th>result</th><th>scenario</th><th>time</th><th>what happened</th></tr>
{{range .Rows}}<tr class="{{lower .Result}}" data-scenario="{{.Name}}"><td class="res">{{.Result}}</td><td>{{.Name}}</td><td>{{dur .Duration}}</td><td>
{{if .Message}}<span class="why">{{.Message}}</span>{{end}}
{{if .Failures}}<ul class="failures">{{range .Failures}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Calls}}<details{{if eq .Result "FAIL"}} open{{end}}><summary>{{plural (len .Calls) "call"}}</summary><table class="calls">
{{range .Calls}}<tr{{if .Failed}} class="failed"{{end}}><td>{{.Method}}</td><td>{{.Operation}}</td><td>{{.Result}}</td><td>{{dur .Duration}}</td><td>{{.Err}}</td></tr>
{{end}}</table></details>{{end}}
</td></tr>
{{end}}</table>
<script>
(function () {
  "use strict";
  var m = document.createElement("div");
  m.id = "rendered";
  m.hidden = true;
  m.setAttribute("data-rows", document.querySelectorAll("table.scen tr[data-scenario]").length);
  m.setAttribute("data-failed-calls", document.querySelectorAll("table.calls tr.failed").length);
  m.setAttribute("data-page-overflow", document.documentElement.scrollWidth - document.documentElement.clientWidth);
  document.body.appendChild(m);
})();
</script>
</body>
</html>
`

// ScenarioCallOf is a call as the conformance page shows it, its error
// through red (errorText).
func ScenarioCallOf(c csiclient.Call, red csiclient.Redactor) ScenarioCall {
	r := result(Record{Code: c.Code, TimedOut: c.TimedOut})
	return ScenarioCall{Method: c.Method, Operation: c.Labels.Operation, Result: r, Err: errorText(c, red), Duration: c.Duration, Failed: r != "OK"}
}
