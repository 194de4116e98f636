package session

import (
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
)

// conformance --apiserver judges the API server's skew against its own
// --kubelet-version, not a release it never set (which read as 1.0).
func TestConformanceSkewReadsItsRelease(t *testing.T) {
	o := &ConformanceOptions{}
	o.KubeletVersion = "1.30"
	if err := o.CompleteRelease(); err != nil {
		t.Fatal(err)
	}
	co := o.commonOptions()
	if co.Release.Minor != 30 {
		t.Fatalf("the control plane's options carry kubelet 1.%d, want the run's 1.30", co.Release.Minor)
	}
	note := cluster.SkewNote("v1.37.2", co.Release.Minor)
	if !strings.Contains(note, "7 minor releases newer than the simulated kubelet 1.30") {
		t.Errorf("skew note %q", note)
	}
}
