package session

import (
	"fmt"
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/docs"
)

// conformancePrinter prints the results of `conformance` as they come: a
// line per scenario for people, or a JSON object per scenario.
type conformancePrinter struct {
	s       Streams
	json    bool
	verbose int
	red     csiclient.Redactor
	// rerun is the command line that runs one scenario again.
	rerun func(name string) string
}

// newConformancePrinter prints to s.Out: text through red's writer, JSON
// lines through red.JSONLine, so that what quotes the driver is scrubbed
// of the run's secrets and escaped.
func newConformancePrinter(s Streams, json bool, verbose int, red csiclient.Redactor) *conformancePrinter {
	if !json {
		s.Out = red.Writer(s.Out)
	}
	return &conformancePrinter{s: s, json: json, verbose: verbose, red: red}
}

func (p *conformancePrinter) object(v map[string]any) {
	v["schemaVersion"] = csiclient.SchemaVersion
	fmt.Fprintf(p.s.Out, "%s\n", p.red.JSONLine(v))
}

func (p *conformancePrinter) header(o *ConformanceOptions, info *conformance.DriverInfo, obj *storagev1.CSIDriver, root string, ownedRoot bool, host conformance.Host) {
	if p.json {
		return
	}
	w := p.s.Out
	fmt.Fprintf(w, "csi-kubelet-sim conformance: driver %s %s on %s, kubelet %s, node %q\n", p.red.Text(info.Name), p.red.Text(info.VendorVersion), o.endpoint, o.release.Version.Label(), o.NodeName)
	if strings.TrimSpace(o.FeatureGates) != "" {
		fmt.Fprintf(w, "  gates       %s (over kubelet %s's defaults; the API server has the same)\n", strings.TrimSpace(o.FeatureGates), o.release.Version)
	}
	if obj != nil {
		fmt.Fprintf(w, "  CSIDriver   %s from %s: %s\n", obj.Name, strings.Join(o.Filenames, ", "), csiDriverSummary(obj))
	} else {
		fmt.Fprintf(w, "  CSIDriver   none given: scenarios from the driver's capabilities; the kubelet behaves as without one (attach required, persistent volumes only)\n")
	}
	if o.testDriver != nil {
		fmt.Fprintf(w, "  testdriver  %s: DriverInfo.Name %s, its declarations checked by testdriver/declarations\n", o.TestDriver, p.red.Text(o.testDriver.DriverInfo.Name))
	}
	fmt.Fprintf(w, "  node        %s\n", listOrNone(info.NodeCapabilityNames()))
	controller := "no controller service"
	if info.Controller {
		controller = listOrNone(info.ControllerCapabilityNames())
	}
	fmt.Fprintf(w, "  controller  %s\n", controller)
	rootText := root
	if ownedRoot {
		rootText += " (temporary, removed afterwards)"
	}
	fmt.Fprintf(w, "  root dir    %s\n", rootText)
	if !host.SELinux {
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

func (p *conformancePrinter) start(sc conformance.Scenario) {
	if !p.json && p.verbose > 0 {
		fmt.Fprintf(p.s.Out, "=== %s: %s (%s)\n", sc.Name, sc.Checks, docs.WithLinks("docs/kubelet.md §"+sc.Section, DocsRef()))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (p *conformancePrinter) result(r conformance.Result) {
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
	w := p.s.Out
	status := map[conformance.Status]string{conformance.Pass: "PASS", conformance.Fail: "FAIL", conformance.Skip: "SKIP"}[r.Status]
	line := fmt.Sprintf("%s  %-44s %9.1fms", PaletteFor(w).Outcome(status), r.Name, ms(r.Duration))
	if r.Status == conformance.Skip {
		line += "  " + docs.WithLinks(p.red.Text(r.Message), DocsRef())
	}
	fmt.Fprintln(w, line)
	if r.Status == conformance.Fail {
		for _, f := range r.Failures {
			fmt.Fprintf(w, "      %s\n", docs.WithLinks(p.red.Text(f.String()), DocsRef()))
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

func (p *conformancePrinter) summary(rep *conformance.Report, junit string) {
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
		if junit != "" {
			m["junit"] = junit
		}
		p.object(m)
		return
	}
	w := p.s.Out
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
	fmt.Fprintf(w, "  calls       %d to the driver, %s in the driver; %s in all\n", calls, round(callTime), round(rep.Duration))
	if junit != "" {
		fmt.Fprintf(w, "  junit       %s\n", junit)
	}
	word := map[string]string{csiclient.ResultOK: "PASS", csiclient.ResultFailed: "FAIL"}[result]
	fmt.Fprintf(w, "  result      %s\n", PaletteFor(w).Outcome(word))
}
