package session

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// summaryFiles records what the summary was told the run wrote.
type summaryFiles struct {
	noConformanceObserver
	written *ConformanceFiles
}

func (s summaryFiles) Summary(_ *conformance.Report, w ConformanceFiles) { *s.written = w }

// The summary names the JUnit file and the HTML report the run wrote, and
// not one it could not write (the command's error says why).
func TestSummaryNamesWrittenFiles(t *testing.T) {
	r, err := node.NewRelease(node.DefaultVersion.String(), "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rep := &conformance.Report{Driver: &conformance.DriverInfo{Name: "ref.csi"}, Results: []conformance.Result{{Name: "lifecycle/inline", Status: conformance.Pass}}}
	for _, tc := range []struct {
		name, junit, report string
		want                ConformanceFiles
		wantErr             bool
	}{
		{name: "both", junit: filepath.Join(dir, "j.xml"), report: filepath.Join(dir, "r.html"),
			want: ConformanceFiles{JUnit: filepath.Join(dir, "j.xml"), Report: filepath.Join(dir, "r.html")}},
		{name: "none"},
		{name: "report unwritable", junit: filepath.Join(dir, "j2.xml"), report: filepath.Join(dir, "no-such-dir", "r.html"),
			want: ConformanceFiles{JUnit: filepath.Join(dir, "j2.xml")}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewConformanceOptions("unix:///nowhere.sock")
			o.JUnit, o.Report, o.Release = tc.junit, tc.report, r
			var got ConformanceFiles
			err := o.finish(rep, summaryFiles{written: &got}, dir)
			if (err != nil) != tc.wantErr {
				t.Fatalf("finish: err %v, want an error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("summary told %+v, want %+v", got, tc.want)
			}
			for _, f := range []string{got.JUnit, got.Report} {
				if f == "" {
					continue
				}
				if _, err := os.Stat(f); err != nil {
					t.Errorf("the summary names %s, which is not there: %v", f, err)
				}
			}
		})
	}
}
