package session

import (
	"fmt"

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
