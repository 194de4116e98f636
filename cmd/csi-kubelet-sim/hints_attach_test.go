package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

// A driver that publishes through its controller, declared with
// attachRequired: false, gets no publish_context and fails its node call:
// run names the CSIDriver as the cause, as validate --endpoint does
// (issue 32).
func TestRunSaysAttachRequiredFalseIsTheCause(t *testing.T) {
	sample, err := os.ReadFile("../../fixtures/samples/attach/attach.yaml")
	if err != nil {
		t.Fatal(err)
	}
	manifests := strings.Replace(string(sample), "attachRequired: true", "attachRequired: false", 1)
	f := writeTestFile(t, t.TempDir(), "attach.yaml", manifests)
	for _, tc := range []struct {
		name       string
		publishes  bool
		wantInHint bool
	}{
		{"driver publishes", true, true},
		{"driver does not publish", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := csifake.New(csifake.Config{
				Name: "ref.csi.kubelet-sim.io", VendorVersion: "0.1.0", NodeID: "sim-node", ManageTargets: true,
				PluginCapabilities: []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE},
			})
			caps := []*csi.ControllerServiceCapability{}
			if tc.publishes {
				caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
					Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME}}})
			}
			d.SetResponse("ControllerGetCapabilities", &csi.ControllerGetCapabilitiesResponse{Capabilities: caps})
			d.Inject("NodePublishVolume", csifake.Fault{Code: codes.InvalidArgument, Message: "publish_context has no device"})
			sock := csifake.ServeTest(t, d)
			root := filepath.Join(t.TempDir(), "root")
			_, stderr, code := cli(t, "", "run", "-f", f, "--endpoint", sock, "--root-dir", root, "--node-name", "sim-node", "--max-attempts", "1")
			if code != exitFailed {
				t.Fatalf("exit %d, want 1\n%s", code, stderr)
			}
			hint := "CSIDriver ref.csi.kubelet-sim.io: attachRequired is false but the driver has PUBLISH_UNPUBLISH_VOLUME"
			if strings.Contains(stderr, hint) != tc.wantInHint {
				t.Errorf("hint %q in stderr: %t, want %t\n%s", hint, !tc.wantInHint, tc.wantInHint, stderr)
			}
		})
	}
}
