package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

// RunPod from Go: the staged sample's calls come back as data, every one
// with its request and answer, and the run leaves nothing; a driver's
// failure is the command's exit code.
func TestRunPodReturnsEveryCall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    func(*csifake.Driver)
		wantCode int
	}{
		{name: "clean run"},
		{name: "NodePublishVolume fails", fault: func(d *csifake.Driver) { d.FailNext("NodePublishVolume", codes.Internal, 1) }, wantCode: ExitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := csifake.New(csifake.Config{
				Name: "ref.csi.kubelet-sim.io", VendorVersion: "0.1.0", NodeID: "n1",
				Capabilities:  []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME},
				ManageTargets: true,
			})
			if tc.fault != nil {
				tc.fault(d)
			}
			o := NewRunOptions(csifake.ServeTest(t, d))
			o.Filenames = []string{"../fixtures/samples/staged/staged.yaml"}
			o.RootDir = filepath.Join(t.TempDir(), "root")
			o.NodeName = "n1"
			res, err := RunPod(context.Background(), o)
			if got := ExitCode(err); got != tc.wantCode {
				t.Fatalf("exit %d (%v), want %d", got, err, tc.wantCode)
			}
			if res == nil || res.Outcome == nil {
				t.Fatal("no result")
			}
			var got []string
			for _, c := range res.Calls {
				if c.Request == nil || (c.Err == nil && c.Response == nil) {
					t.Errorf("call %s without its request or answer: %+v", c.Method, c)
				}
				got = append(got, c.Method)
			}
			var sent []string
			for _, c := range d.Calls() {
				sent = append(sent, c.Method)
			}
			if !slices.Equal(got, sent) {
				t.Errorf("returned calls %q\nthe driver got %q", got, sent)
			}
			if tc.wantCode == 0 && !slices.Contains(got, "NodeStageVolume") {
				t.Errorf("no NodeStageVolume in %q", got)
			}
			if len(d.Staged()) != 0 || len(d.PublishedVolumes()) != 0 {
				t.Errorf("left with the driver: staged %v, published %v", d.Staged(), d.PublishedVolumes())
			}
			if tc.wantCode == 0 {
				if _, err := os.Stat(o.RootDir); !os.IsNotExist(err) {
					t.Errorf("root dir %s left: %v", o.RootDir, err)
				}
			}
		})
	}
}

// Conformance from Go: a result per selected scenario, each also handed
// to OnResult as it ends.
func TestConformanceReturnsResults(t *testing.T) {
	d := csifake.New(csifake.Config{Name: "drv.example.com", VendorVersion: "9.9.9", NodeID: "node-1"})
	o := NewConformanceOptions(csifake.ServeTest(t, d))
	o.Focus = "^(registration|timing)/"
	o.RootDir = filepath.Join(t.TempDir(), "root")
	o.NodeName = "n1"
	var seen []string
	o.OnResult = func(r conformance.Result) { seen = append(seen, r.Name) }
	rep, err := Conformance(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, r := range rep.Results {
		if r.Status == conformance.Pass {
			ran = append(ran, r.Name)
		}
	}
	if !slices.Contains(ran, "registration/node-info") || !slices.Contains(ran, "timing/half-timeout") {
		t.Errorf("passed %q, want registration/node-info and timing/half-timeout", ran)
	}
	if !slices.Contains(seen, "registration/node-info") {
		t.Errorf("OnResult saw %q", seen)
	}
}
