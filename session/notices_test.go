package session

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

// recordedNotices is an observer that keeps the warnings and notes.
type recordedNotices struct {
	noObserver
	warnings, notes []string
}

func (r *recordedNotices) Warning(msg string) { r.warnings = append(r.warnings, msg) }
func (r *recordedNotices) Note(msg string)    { r.notes = append(r.notes, msg) }

// A Go caller's run writes nothing on the streams it holds: the warning
// on the input (a kind the kubelet does not read) and the note on the
// root dir (given through a symlink) go to its observer as data, or
// nowhere without one.
func TestRunPodWritesNoStream(t *testing.T) {
	for _, withObserver := range []bool{false, true} {
		d := csifake.New(csifake.Config{
			Name: "ref.csi.kubelet-sim.io", VendorVersion: "0.1.0", NodeID: "n1",
			Capabilities:  []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME},
			ManageTargets: true,
		})
		dir := t.TempDir()
		extra := filepath.Join(dir, "configmap.yaml")
		if err := os.WriteFile(extra, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		real, link := filepath.Join(dir, "real"), filepath.Join(dir, "link")
		if err := os.Mkdir(real, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		o := NewRunOptions(csifake.ServeTest(t, d))
		var out, errOut bytes.Buffer
		o.Out, o.Err = &out, &errOut
		o.Filenames = []string{"../fixtures/samples/staged/staged.yaml", extra}
		o.RootDir = link
		o.NodeName = "n1"
		rec := &recordedNotices{}
		if withObserver {
			o.Printer = rec
		}
		if _, err := RunPod(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if out.Len() > 0 || errOut.Len() > 0 {
			t.Errorf("observer %v: written on the streams: stdout %q stderr %q", withObserver, out.String(), errOut.String())
		}
		if !withObserver {
			continue
		}
		if len(rec.warnings) != 1 || !strings.Contains(rec.warnings[0], "skipping v1 ConfigMap") {
			t.Errorf("warnings %q, want the ConfigMap's", rec.warnings)
		}
		if len(rec.notes) != 1 || !strings.Contains(rec.notes[0], "(through a symlink)") {
			t.Errorf("notes %q, want the root dir's symlink", rec.notes)
		}
	}
}
