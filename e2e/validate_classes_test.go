package e2e

import (
	"testing"
)

// TestValidateStorageClassClaimPod: an input of a StorageClass, a claim
// left to the provisioner and a pod (fixtures/samples/provision) is
// validated, not "nothing to validate": the class after defaulting, a
// warning that no CSIDriver names its provisioner, and the claim the
// provisioner would provision (docs/kubelet.md §22).
func TestValidateStorageClassClaimPod(t *testing.T) {
	v := runValidateBoth(t, sample(t, "provision"))
	wantCode(t, v.JSON, 0)
	want := []vFinding{
		{Object: "StorageClass fast", Severity: "warning", Line: 9, Message: `no CSIDriver named "ref.csi.kubelet-sim.io": the kubelet treats the provisioned volumes' driver as having none (attach required, no pod info, persistent volumes only)`},
		{Object: "StorageClass fast", Severity: "info", Line: 9, Message: "valid; after defaulting: provisioner=ref.csi.kubelet-sim.io reclaimPolicy=Delete volumeBindingMode=Immediate parameters=2"},
		{Object: "PersistentVolumeClaim default/data", Severity: "info", Line: 19, Message: "valid; no PV: provisioned by ref.csi.kubelet-sim.io from StorageClass fast (CreateVolume pvc-<claim uid>) for pod default/db"},
	}
	if len(v.Findings) != len(want) {
		t.Fatalf("findings %+v, want %d", v.Findings, len(want))
	}
	for i, f := range v.Findings {
		f.Source = ""
		if f != want[i] {
			t.Errorf("finding %d: %+v, want %+v", i, f, want[i])
		}
	}
}
