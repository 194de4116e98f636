package session

import (
	"fmt"
	"os"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	loadreport "github.com/csi-kubelet-sim/csi-kubelet-sim/report"
)

// writeConformanceReport writes --report: the scenarios as rows, a failed
// one with its failures and its calls, the failed calls marked.
func (o *ConformanceOptions) writeConformanceReport(rep *conformance.Report) error {
	if o.Report == "" {
		return nil
	}
	pass, fail, skip := rep.Counts()
	hdr := loadreport.Header{
		Command: "conformance", Endpoint: o.Endpoint, Node: o.NodeName,
		Kubelet: o.Release.Describe(), Gates: o.Release.Gates.String(),
		Verdict:    fmt.Sprintf("%d passed, %d failed, %d skipped", pass, fail, skip),
		Failed:     rep.Failed(),
		LeftBehind: "each scenario checks that nothing of its own is left (see its row)",
	}
	if rep.Driver != nil {
		hdr.Driver, hdr.DriverVersion = rep.Driver.Name, rep.Driver.VendorVersion
	}
	rows := make([]loadreport.ScenarioRow, 0, len(rep.Results))
	for _, r := range rep.Results {
		row := loadreport.ScenarioRow{
			Name:     r.Name,
			Result:   map[conformance.Status]string{conformance.Pass: "PASS", conformance.Fail: "FAIL", conformance.Skip: "SKIP"}[r.Status],
			Duration: r.Duration,
		}
		if r.Status == conformance.Skip {
			row.Message = rep.Redactor.Text(r.Message)
		}
		for _, f := range r.Failures {
			row.Failures = append(row.Failures, rep.Redactor.Text(f.String()))
		}
		for _, c := range rep.ScenarioCalls[r.Name] {
			row.Calls = append(row.Calls, loadreport.ScenarioCallOf(c, rep.Redactor))
		}
		rows = append(rows, row)
	}
	f, err := os.Create(o.Report)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	hdr = hdr.Cleaned(rep.Redactor)
	title := fmt.Sprintf("csi-kubelet-sim conformance: %s", hdr.Driver)
	if err := loadreport.WriteConformanceHTML(f, title, hdr, rows); err != nil {
		f.Close()
		return fmt.Errorf("--report: %w", err)
	}
	return f.Close()
}
