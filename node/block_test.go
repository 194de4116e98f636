package node

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// docs/kubelet.md §1.4, §3, §8, §11: a volumeMode Block PV is staged and published
// at the block paths with a Block{} capability; NodePublish always carries
// the block staging path; pod info is added without tokens; no mount flags.
func TestBlockVolumeRequests(t *testing.T) {
	manifests := docs(
		csiDriverDoc("attachRequired: false", "podInfoOnMount: true", "tokenRequests: [{audience: vault}]"),
		pvDoc("pv-1", "vol-1", "data-1", "volumeMode: Block", "mountOptions: [noatime]"),
		pvcDoc("data-1", "pv-1"),
		blockPod1,
	)
	for _, tc := range []struct {
		name  string
		caps  []csi.NodeServiceCapability_RPC_Type
		stage bool
	}{
		{"with STAGE_UNSTAGE_VOLUME", []csi.NodeServiceCapability_RPC_Type{capStage}, true},
		{"without STAGE_UNSTAGE_VOLUME", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv := newFakeDriver(tc.caps...)
			e := newEnv(t, manifests, drv, func(c *Config) { c.DryRun = true })
			e.mountOK("app-1")
			stagingPath := e.root + "/plugins/kubernetes.io/csi/volumeDevices/staging/pv-1"
			publishPath := e.root + "/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/pod-uid-1"
			stages := only(drv.Calls(), "NodeStageVolume")
			if tc.stage {
				if len(stages) != 1 {
					t.Fatalf("NodeStageVolume calls = %d, want 1", len(stages))
				}
				st := stages[0].Request.(*csi.NodeStageVolumeRequest)
				if st.GetStagingTargetPath() != stagingPath {
					t.Errorf("staging_target_path = %q, want %q", st.GetStagingTargetPath(), stagingPath)
				}
				if st.GetVolumeCapability().GetBlock() == nil || st.GetVolumeCapability().GetMount() != nil {
					t.Errorf("NodeStage capability = %v, want Block{}", st.GetVolumeCapability())
				}
			} else if len(stages) != 0 {
				t.Fatalf("NodeStageVolume called without STAGE_UNSTAGE_VOLUME")
			}
			pub := one[*csi.NodePublishVolumeRequest](t, drv.Calls(), "NodePublishVolume")
			if pub.GetTargetPath() != publishPath {
				t.Errorf("target_path = %q, want %q", pub.GetTargetPath(), publishPath)
			}
			if pub.GetStagingTargetPath() != stagingPath {
				t.Errorf("staging_target_path = %q, want %q even without staging", pub.GetStagingTargetPath(), stagingPath)
			}
			if pub.GetVolumeCapability().GetBlock() == nil {
				t.Errorf("NodePublish capability = %v, want Block{}", pub.GetVolumeCapability())
			}
			ctx := pub.GetVolumeContext()
			if ctx["csi.storage.k8s.io/pod.name"] != "app-1" || ctx["csi.storage.k8s.io/ephemeral"] != "false" {
				t.Errorf("volume_context = %v, want pod info with ephemeral false", ctx)
			}
			if _, ok := ctx["csi.storage.k8s.io/serviceAccount.tokens"]; ok {
				t.Errorf("block NodePublish got tokens: %v", ctx)
			}
			want := `{"attachmentID":"` + attachmentVol1 + `","driverName":"hostpath.csi.k8s.io","nodeName":"node-1","specVolID":"pv-1","volumeHandle":"vol-1"}` + "\n"
			if got := readFile(e.root + "/plugins/kubernetes.io/csi/volumeDevices/pv-1/data/vol_data.json"); got != want {
				t.Errorf("block vol_data.json = %q, want %q", got, want)
			}
			drv.ClearCalls()
			e.unmountOK("app-1")
			var got []string
			for _, c := range drv.Calls() {
				got = append(got, c.Method)
			}
			wantCalls := []string{"NodeUnpublishVolume"}
			if tc.stage {
				wantCalls = append(wantCalls, "NodeGetCapabilities", "NodeUnstageVolume")
			}
			if len(got) != len(wantCalls) {
				t.Fatalf("teardown calls = %v, want %v", got, wantCalls)
			}
			for i := range got {
				if got[i] != wantCalls[i] {
					t.Fatalf("teardown calls = %v, want %v", got, wantCalls)
				}
			}
			if exists(stagingPath) || exists(e.root+"/plugins/kubernetes.io/csi/volumeDevices/pv-1") {
				t.Errorf("block directories left after teardown")
			}
		})
	}
}
