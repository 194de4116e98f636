package session

import (
	"fmt"
	"os"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	loadreport "github.com/csi-kubelet-sim/csi-kubelet-sim/report"
)

// plural is "1 pod", "2 pods".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// reportHeader is the top of the --report page: what ran against what,
// how it ended and what it left on the node.
func (ss *session) reportHeader(out *node.Outcome, exit error) loadreport.Header {
	h := loadreport.Header{
		Command:    ss.command,
		Endpoint:   ss.endpoint,
		Node:       ss.opts.NodeName,
		Kubelet:    ss.opts.Release.Describe(),
		Gates:      ss.opts.Release.Gates.String(),
		Verdict:    "OK",
		LeftBehind: LeftoverText(out.Leftovers),
	}
	if r := out.Registration; r != nil {
		h.Driver, h.DriverVersion = r.DriverName, r.VendorVersion
	}
	if exit != nil {
		h.Verdict, h.Failed = exit.Error(), true
	}
	return h
}

// reportPage is the --report HTML page of a run: the stats and a bounded
// record of the calls, fed by the trace as they happen.
type reportPage struct {
	red   csiclient.Redactor
	file  string
	stats *loadreport.Stats
	rec   *loadreport.Recorder
}

func newReportPage(ss *session, file string) *reportPage {
	p := &reportPage{red: ss.red, file: file, stats: loadreport.NewStats()}
	ss.trace.AddSink(p.stats)
	if file != "" {
		p.rec = loadreport.NewRecorder(loadreport.DefaultMaxRecords).WithRedactor(ss.red)
		ss.trace.AddSink(p.rec)
	}
	return p
}

// write writes the page, when one was asked for.
func (p *reportPage) write(title string, hdr loadreport.Header) error {
	if p.rec == nil {
		return nil
	}
	f, err := os.Create(p.file)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if err := loadreport.WriteHTMLWithHeader(f, p.red.Text(title), hdr.Cleaned(p.red), p.rec.Recorded(), p.stats.Summary()); err != nil {
		f.Close()
		return fmt.Errorf("--report: %w", err)
	}
	return f.Close()
}
