package printers

import (
	"bytes"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// The notices the engine hands over are printed as the engine printed
// them itself before: stderr, text even with -o json; cleanup's
// nothing-to-do on stdout.
func TestNoticesBytes(t *testing.T) {
	var out, errOut bytes.Buffer
	p := NewSession(&out, &errOut, true, 0)
	p.Warning("a\x1b[31m b")
	p.Note("--root-dir /l is /r (through a symlink)")
	p.WaitingForDriver(session.DriverWait{APIServer: "https://127.0.0.1:1", Wait: time.Minute, Endpoint: "/run/csi.sock", Kubeconfig: "/k"})
	p.NothingToDo(session.NothingToDo{RootDir: "/x", Missing: true})
	p.NothingToDo(session.NothingToDo{RootDir: "/y"})
	wantErr := "warning: a\\x1b[31m b\n" +
		"note: --root-dir /l is /r (through a symlink)\n" +
		"csi-kubelet-sim: the API server is at https://127.0.0.1:1; waiting up to 1m0s for the driver's socket /run/csi.sock: start the driver with KUBECONFIG=/k\n"
	wantOut := "csi-kubelet-sim cleanup: /x does not exist: nothing to do\n" +
		"csi-kubelet-sim cleanup: nothing of the simulator's in /y (no journal): nothing to do\n"
	if errOut.String() != wantErr {
		t.Errorf("stderr\n%q\nwant\n%q", errOut.String(), wantErr)
	}
	if out.String() != wantOut {
		t.Errorf("stdout\n%q\nwant\n%q", out.String(), wantOut)
	}
	if p.LoadProgress() != nil {
		t.Error("a progress line with -o json, or not on a terminal")
	}
}
