package printers

import (
	"fmt"
	"io"
	"os"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	loadreport "github.com/csi-kubelet-sim/csi-kubelet-sim/report"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// notices prints what the engine tells the user beside a command's output
// (session.Notices): on stderr, as text even with -o json, so that stdout
// stays the trace, the report or the JSON lines.
type notices struct {
	errOut io.Writer
}

// Warning is a warning on the input or a cluster's answer. It can quote
// either: through the one escaping function, as every printed field.
func (n notices) Warning(msg string) {
	fmt.Fprintf(n.errOut, "warning: %s\n", csiclient.Redactor{}.Text(msg))
}

// Note is a note on the root dir (a symlink resolved, a stale lock taken
// over).
func (n notices) Note(msg string) { fmt.Fprintf(n.errOut, "note: %s\n", msg) }

// WaitingForDriver: with --apiserver the driver can start only once its
// kubeconfig exists; the user is told where it is.
func (n notices) WaitingForDriver(w session.DriverWait) {
	fmt.Fprintf(n.errOut, "csi-kubelet-sim: the API server is at %s; waiting up to %s for the driver's socket %s: start the driver with KUBECONFIG=%s\n", w.APIServer, w.Wait, w.Endpoint, w.Kubeconfig)
}

// loadProgress is `load`'s live line, on stderr when it is a terminal;
// none with -o json.
func (n notices) loadProgress(json bool) *loadreport.Progress {
	f, ok := n.errOut.(*os.File)
	if !ok || json {
		return nil
	}
	return loadreport.NewProgress(f, 0)
}
