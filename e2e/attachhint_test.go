package e2e

// run names a CSIDriver with attachRequired: false as the likely cause of
// a failed node call when the driver's controller offers
// PUBLISH_UNPUBLISH_VOLUME, as validate --endpoint does; only from the
// capabilities the run already asked (the external-provisioner's), never
// with a call of its own after the kubelet's.

import (
	"path/filepath"
	"strings"
	"testing"
)

const attachFalseCSIDriver = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: ref.csi.kubelet-sim.io
spec:
  attachRequired: false
`

func TestRunAttachRequiredFalseHint(t *testing.T) {
	t.Parallel()
	sample, err := filepath.Abs(filepath.Join("..", "fixtures", "samples", "provision"))
	if err != nil {
		t.Fatal(err)
	}
	const hint = "attachRequired is false but the driver's controller offers PUBLISH_UNPUBLISH_VOLUME"
	for _, tc := range []struct {
		name       string
		driverArgs []string
		wantHint   bool
	}{
		{"controller publishes", []string{"--controller-publish"}, true},
		{"controller does not publish", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			drv := startRefDriver(t, work, append(tc.driverArgs, "--fault", "NodeStageVolume=InvalidArgument")...)
			r := runSim(t, "run", "-f", sample, "-f", writeFile(t, work, "csidriver.yaml", attachFalseCSIDriver),
				"--endpoint", "unix://"+drv.Sock, "--root-dir", filepath.Join(work, "root"), "--node-name", simNode, "--max-attempts", "1", "-o", "json")
			wantCode(t, r, 1)
			if got := strings.Contains(r.Stderr, hint); got != tc.wantHint {
				t.Errorf("hint in stderr: %v, want %v\n%s", got, tc.wantHint, r.Stderr)
			}
			// The capabilities come from the external-provisioner's one
			// question before CreateVolume, not from a call after the
			// kubelet's.
			if n := strings.Count(r.Stdout, `"method":"ControllerGetCapabilities"`); n != 1 {
				t.Errorf("%d ControllerGetCapabilities calls, want the provisioner's one\n%s", n, r.Stdout)
			}
		})
	}
}
