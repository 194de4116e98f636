package printers

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/buildinfo"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/docs"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// Conformance prints the results of `conformance` as they come: a line
// per scenario for people, or a JSON object per scenario. It is the
// command's session.ConformanceObserver.
type Conformance struct {
	notices
	out     io.Writer
	raw     io.Writer // out before the header wraps it in the redactor's writer
	json    bool
	verbose int
	red     csiclient.Redactor
	// rerun is the command line that runs one scenario again.
	rerun func(name string) string
}

// NewConformance prints to out (once the run's header gives the secrets
// to keep out: text through the redactor's writer, JSON lines through its
// JSONLine, so that what quotes the driver is scrubbed and escaped).
// Its notices go to errOut.
func NewConformance(out, errOut io.Writer, json bool, verbose int) *Conformance {
	return &Conformance{notices: notices{errOut: errOut}, out: out, raw: out, json: json, verbose: verbose}
}

// Announce is a line on the run's API server (--apiserver), after the
// header: on stdout, or stderr with -o json.
func (p *Conformance) Announce(msg string) {
	w := p.raw
	if p.json {
		w = p.errOut
	}
	fmt.Fprintln(w, msg)
}

// LiveTrace is -v's trace of each scenario as it runs (text only), with
// the run's secrets kept out.
func (p *Conformance) LiveTrace() func(scenario string) csiclient.Sink {
	if p.verbose == 0 || p.json {
		return nil
	}
	return func(string) csiclient.Sink {
		return csiclient.NewTextPrinter(p.raw, p.red, p.verbose > 1, false)
	}
}

func (p *Conformance) object(v map[string]any) {
	v["schemaVersion"] = csiclient.SchemaVersion
	fmt.Fprintf(p.out, "%s\n", p.red.JSONLine(v))
}

// Header takes the run's redactor and rerun hint, and prints what the run
// is about to check.
func (p *Conformance) Header(h session.ConformanceHeader) {
	p.red, p.rerun = h.Redactor, h.Rerun
	if p.json {
		return
	}
	p.out = p.red.Writer(p.out)
	w := p.out
	info, obj := h.Driver, h.CSIDriver
	fmt.Fprintf(w, "csi-kubelet-sim conformance: driver %s %s on %s, kubelet %s, node %q\n", p.red.Text(info.Name), p.red.Text(info.VendorVersion), h.Endpoint, h.Release.Version.Label(), h.NodeName)
	if strings.TrimSpace(h.FeatureGates) != "" {
		fmt.Fprintf(w, "  gates       %s (over kubelet %s's defaults; the API server has the same)\n", strings.TrimSpace(h.FeatureGates), h.Release.Version)
	}
	if obj != nil {
		fmt.Fprintf(w, "  CSIDriver   %s from %s: %s\n", obj.Name, strings.Join(h.Files, ", "), h.CSIDriverSummary)
	} else {
		fmt.Fprintf(w, "  CSIDriver   none given: scenarios from the driver's capabilities; the kubelet behaves as without one (attach required, persistent volumes only)\n")
	}
	if h.TestDriverFile != "" {
		fmt.Fprintf(w, "  testdriver  %s: DriverInfo.Name %s, its declarations checked by testdriver/declarations\n", h.TestDriverFile, p.red.Text(h.TestDriverName))
	}
	fmt.Fprintf(w, "  node        %s\n", listOrNone(info.NodeCapabilityNames()))
	controller := "no controller service"
	if info.Controller {
		controller = listOrNone(info.ControllerCapabilityNames())
	}
	fmt.Fprintf(w, "  controller  %s\n", controller)
	rootText := h.RootDir
	if h.OwnedRoot {
		rootText += " (temporary, removed afterwards)"
	}
	fmt.Fprintf(w, "  root dir    %s\n", rootText)
	if !h.Host.SELinux {
		fmt.Fprintf(w, "  host        no SELinux (/sys/fs/selinux absent): the SELinux scenario is informational\n")
	}
	fmt.Fprintln(w)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, " ")
}

// Start announces a scenario (-v).
func (p *Conformance) Start(sc conformance.Scenario) {
	if !p.json && p.verbose > 0 {
		fmt.Fprintf(p.out, "=== %s: %s (%s)\n", sc.Name, sc.Checks, docs.WithLinks("docs/kubelet.md §"+sc.Section, buildinfo.DocsRef()))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Result prints a scenario's result.
func (p *Conformance) Result(r conformance.Result) {
	if p.json {
		type failure struct {
			Did     string `json:"did"`
			Needed  string `json:"needed,omitempty"`
			Section string `json:"section,omitempty"`
		}
		fs := []failure{}
		for _, f := range r.Failures {
			fs = append(fs, failure{f.Did, f.Needed, f.Section})
		}
		p.object(map[string]any{
			"kind": "scenario", "name": r.Name, "status": r.Status, "result": scenarioResult(r.Status), "duration_ms": ms(r.Duration),
			"message": r.Message, "failures": fs, "notes": nonNil(r.Notes), "calls": r.Calls,
			"kubelet_specific": r.KubeletSpecific,
		})
		return
	}
	w := p.out
	status := map[conformance.Status]string{conformance.Pass: "PASS", conformance.Fail: "FAIL", conformance.Skip: "SKIP"}[r.Status]
	line := fmt.Sprintf("%s  %-44s %9.1fms", PaletteFor(w).Outcome(status), r.Name, ms(r.Duration))
	if r.Status == conformance.Skip {
		line += "  " + docs.WithLinks(p.red.Text(r.Message), buildinfo.DocsRef())
	}
	fmt.Fprintln(w, line)
	if r.Status == conformance.Fail {
		for _, f := range r.Failures {
			fmt.Fprintf(w, "      %s\n", docs.WithLinks(p.red.Text(f.String()), buildinfo.DocsRef()))
		}
		if p.rerun != nil {
			fmt.Fprintf(w, "      rerun just this one: %s\n", p.rerun(r.Name))
		}
	}
	if p.verbose > 0 {
		for _, n := range r.Notes {
			fmt.Fprintf(w, "      · %s\n", p.red.Text(n))
		}
	}
}

// scenarioResult is a scenario's status in the words of every record's
// "result".
func scenarioResult(s conformance.Status) string {
	switch s {
	case conformance.Pass:
		return csiclient.ResultOK
	case conformance.Skip:
		return csiclient.ResultSkipped
	}
	return csiclient.ResultFailed
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Summary prints the run's counts and result.
func (p *Conformance) Summary(rep *conformance.Report, written session.ConformanceFiles) {
	pass, fail, skip := rep.Counts()
	kubelet := 0
	for _, r := range rep.Results {
		if r.KubeletSpecific && r.Status != conformance.Skip {
			kubelet++
		}
	}
	calls, callTime := rep.CallCount()
	result := csiclient.ResultOK
	if rep.Failed() {
		result = csiclient.ResultFailed
	}
	if p.json {
		m := map[string]any{
			"kind": "summary", "passed": pass, "failed": fail, "skipped": skip, "not_selected": rep.NotSelected,
			"kubelet_specific_checks": kubelet, "duration_ms": ms(rep.Duration), "interrupted": rep.Interrupted, "result": result,
			"calls": calls, "driver_ms": ms(callTime),
			"driver": map[string]any{
				"name": rep.Driver.Name, "vendor_version": rep.Driver.VendorVersion, "node_id": rep.Driver.NodeID,
				"node_capabilities": nonNil(rep.Driver.NodeCapabilityNames()), "controller_service": rep.Driver.Controller,
				"controller_capabilities": nonNil(rep.Driver.ControllerCapabilityNames()),
			},
			"csidriver": nil,
		}
		if rep.CSIDriver != nil {
			m["csidriver"] = rep.CSIDriver.Name
		}
		if v := rep.Volume; v != nil {
			vol := map[string]any{"handle": v.Handle, "created": v.Created, "description": v.Describe()}
			if v.Err != nil {
				vol["error"] = v.Err.Error()
			}
			m["volume"] = vol
		}
		if written.JUnit != "" {
			m["junit"] = written.JUnit
		}
		if written.Report != "" {
			m["report"] = written.Report
		}
		p.object(m)
		return
	}
	w := p.out
	fmt.Fprintf(w, "\nsummary\n")
	if v := rep.Volume; v != nil {
		fmt.Fprintf(w, "  volume      %s\n", p.red.Text(v.Describe()))
		if v.Err != nil {
			fmt.Fprintf(w, "  volume      FAILED: %s\n", p.red.Text(v.Err.Error()))
		}
	}
	sel := ""
	if rep.NotSelected > 0 {
		sel = fmt.Sprintf(", %d not selected by --focus/--skip", rep.NotSelected)
	}
	fmt.Fprintf(w, "  scenarios   %d passed, %d failed, %d skipped%s; %d kubelet-specific checks ran\n", pass, fail, skip, sel, kubelet)
	fmt.Fprintf(w, "  calls       %d to the driver, %s in the driver; %s in all\n", calls, csiclient.FormatDuration(callTime), csiclient.FormatDuration(rep.Duration))
	if written.JUnit != "" {
		fmt.Fprintf(w, "  junit       %s\n", written.JUnit)
	}
	if written.Report != "" {
		fmt.Fprintf(w, "  report      %s\n", written.Report)
	}
	word := map[string]string{csiclient.ResultOK: "PASS", csiclient.ResultFailed: "FAIL"}[result]
	fmt.Fprintf(w, "  result      %s\n", PaletteFor(w).Outcome(word))
}
