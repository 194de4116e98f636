package printers

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/validate"
)

// Findings prints validate's findings: a line each, or one JSON object
// each with -o json. It is the command's validate.FindingsObserver.
type Findings struct {
	out  io.Writer
	json bool
}

// NewFindings prints to out, as JSON lines when json.
func NewFindings(out io.Writer, json bool) *Findings { return &Findings{out: out, json: json} }

// Findings prints them all.
func (p *Findings) Findings(fs []validate.Finding) {
	if p.json {
		enc := json.NewEncoder(p.out)
		for _, f := range fs {
			_ = enc.Encode(f)
		}
		return
	}
	for _, f := range fs {
		fmt.Fprintln(p.out, f.Text())
	}
}
