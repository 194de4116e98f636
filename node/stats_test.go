package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// KUBELET.md 11: a NodeGetVolumeStats answer without usage. From 1.32 to
// 1.36, with the CSIVolumeHealth gate, the kubelet asks VOLUME_CONDITION
// after the call and accepts a driver that has it; before 1.32, without the
// gate, without the capability, and always in 1.37 (the code was removed),
// the answer is rejected with "failed to get usage from response. usage is
// nil".
func TestVolumeStatsWithoutUsage(t *testing.T) {
	for _, tc := range []struct {
		minor     int
		gates     string
		condition bool // the driver has VOLUME_CONDITION
		noUsage   bool
		wantErr   bool
		wantAsks  []string
	}{
		{minor: 35, noUsage: false, wantAsks: []string{"GET_VOLUME_STATS"}},
		{minor: 35, noUsage: true, wantErr: true, wantAsks: []string{"GET_VOLUME_STATS"}},
		{minor: 30, gates: "CSIVolumeHealth=true", condition: true, noUsage: true, wantErr: true, wantAsks: []string{"GET_VOLUME_STATS", "VOLUME_CONDITION"}},
		{minor: 31, gates: "CSIVolumeHealth=true", condition: true, noUsage: true, wantErr: true, wantAsks: []string{"GET_VOLUME_STATS", "VOLUME_CONDITION"}},
		{minor: 32, gates: "CSIVolumeHealth=true", condition: true, noUsage: true, wantAsks: []string{"GET_VOLUME_STATS", "VOLUME_CONDITION"}},
		{minor: 35, gates: "CSIVolumeHealth=true", condition: false, noUsage: true, wantErr: true, wantAsks: []string{"GET_VOLUME_STATS", "VOLUME_CONDITION"}},
		{minor: 36, gates: "CSIVolumeHealth=true", condition: true, noUsage: true, wantAsks: []string{"GET_VOLUME_STATS", "VOLUME_CONDITION"}},
		{minor: 37, gates: "CSIVolumeHealth=true", condition: true, noUsage: true, wantErr: true, wantAsks: []string{"GET_VOLUME_STATS"}},
	} {
		t.Run(fmt.Sprintf("1.%d-%s-condition=%v-nousage=%v", tc.minor, tc.gates, tc.condition, tc.noUsage), func(t *testing.T) {
			caps := []csi.NodeServiceCapability_RPC_Type{capStage, csi.NodeServiceCapability_RPC_GET_VOLUME_STATS}
			if tc.condition {
				caps = append(caps, volumeConditionCapability)
			}
			drv := newFakeDriver(caps...)
			drv.NoUsage = tc.noUsage
			e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv, withGates(t, tc.minor, tc.gates))
			e.mountOK("app-1")
			drv.reset()
			errs := e.k.VolumeStats(context.Background(), e.pod("app-1"), 1)
			switch {
			case tc.wantErr && (len(errs) != 1 || !strings.Contains(errs[0].Error(), "failed to get usage from response. usage is nil")):
				t.Errorf("errors %v, want the kubelet's usage-is-nil rejection", errs)
			case !tc.wantErr && len(errs) != 0:
				t.Errorf("errors %v, want none", errs)
			}
			var asks []string
			for _, c := range only(drv.Calls(), "NodeGetCapabilities") {
				asks = append(asks, c.Asking)
			}
			if !slices.Equal(asks, tc.wantAsks) {
				t.Errorf("capability queries %q, want %q", asks, tc.wantAsks)
			}
			if n := len(only(drv.Calls(), "NodeGetVolumeStats")); n != 1 {
				t.Errorf("%d NodeGetVolumeStats calls, want 1", n)
			}
		})
	}
}
