package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// docs/kubelet.md §11: a NodeGetVolumeStats answer without usage. From 1.32 to
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
				caps = append(caps, csiplugin.VolumeConditionCapability)
			}
			drv := newFakeDriver(caps...)
			if tc.noUsage {
				withoutUsage(drv)
			}
			e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv, withGates(t, tc.minor, tc.gates))
			e.mountOK("app-1")
			drv.ClearCalls()
			errs := e.k.vm.VolumeStats(context.Background(), e.pod("app-1"), 1)
			switch {
			case tc.wantErr && (len(errs) != 1 || !strings.Contains(errs[0].Error(), "failed to get usage from response. usage is nil")):
				t.Errorf("errors %v, want the kubelet's usage-is-nil rejection", errs)
			case !tc.wantErr && len(errs) != 0:
				t.Errorf("errors %v, want none", errs)
			}
			var asks []string
			for _, c := range only(drv.Calls(), "NodeGetCapabilities") {
				asks = append(asks, c.Labels.Asking)
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

// docs/kubelet.md §16: per mounted volume a GET_VOLUME_STATS query and
// NodeGetVolumeStats on the target path (for a block volume the global map
// path and the pod UID), never the staging path; no call without the
// capability; a failed call is reported per volume.
func TestVolumeStatsCalls(t *testing.T) {
	const statsCap = csi.NodeServiceCapability_RPC_GET_VOLUME_STATS
	tests := []struct {
		name      string
		pv        string
		pod       string // "": pod1
		caps      []csi.NodeServiceCapability_RPC_Type
		fault     error
		wantPath  string // under the root; "" : no NodeGetVolumeStats
		wantStep  string
		wantError string
	}{
		{name: "filesystem", pv: pv1, caps: []csi.NodeServiceCapability_RPC_Type{capStage, statsCap},
			wantPath: "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1/mount", wantStep: "stats BYTES: used 40 of 100, available 60"},
		{name: "block", pv: pvDoc("pv-1", "vol-1", "data-1", "volumeMode: Block"), pod: blockPod1, caps: []csi.NodeServiceCapability_RPC_Type{capStage, statsCap},
			wantPath: "/plugins/kubernetes.io/csi/volumeDevices/pv-1/dev/pod-uid-1", wantStep: "stats BYTES: used 40 of 100, available 60"},
		{name: "no GET_VOLUME_STATS", pv: pv1, caps: []csi.NodeServiceCapability_RPC_Type{capStage},
			wantStep: "no GET_VOLUME_STATS: metrics are not supported by driver hostpath.csi.k8s.io; no call"},
		{name: "driver error", pv: pv1, caps: []csi.NodeServiceCapability_RPC_Type{statsCap}, fault: status.Error(codes.NotFound, "gone"),
			wantPath:  "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1/mount",
			wantError: `volume stats of "pv-1": rpc error: code = NotFound desc = gone`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod
			if pod == "" {
				pod = pod1
			}
			e := newEnv(t, docs(noAttachDriver, tc.pv, pvc1, pod), newFakeDriver(tc.caps...), dryRun)
			e.mountOK("app-1")
			e.drv.ClearCalls()
			if tc.fault != nil {
				e.drv.Errors("NodeGetVolumeStats", tc.fault)
			}
			errs := e.k.vm.VolumeStats(context.Background(), e.pod("app-1"), 3)
			switch {
			case tc.wantError == "" && len(errs) != 0:
				t.Errorf("errors %v", errs)
			case tc.wantError != "" && (len(errs) != 1 || errs[0].Error() != tc.wantError):
				t.Errorf("errors %v, want %q", errs, tc.wantError)
			}
			want := []string{"GetMetrics#3:NodeGetCapabilities(GET_VOLUME_STATS)"}
			if tc.wantPath != "" {
				want = append(want, "GetMetrics#3:NodeGetVolumeStats")
				req := one[*csi.NodeGetVolumeStatsRequest](t, e.drv.Calls(), "NodeGetVolumeStats")
				if req.GetVolumeId() != "vol-1" || req.GetVolumePath() != e.root+tc.wantPath || req.GetStagingTargetPath() != "" {
					t.Errorf("request %v, want vol-1 at <root>%s, no staging path", req, tc.wantPath)
				}
			}
			if got := seq(e.drv.Calls()); !slices.Equal(got, want) {
				t.Errorf("calls %q, want %q", got, want)
			}
			if tc.wantStep != "" && !slices.Contains(e.steps(false), tc.wantStep) {
				t.Errorf("steps %q, want %q", e.steps(false), tc.wantStep)
			}
			// Unmounted volumes get no stats.
			e.unmountOK("app-1")
			e.drv.ClearCalls()
			if errs := e.k.vm.VolumeStats(context.Background(), e.pod("app-1"), 4); len(errs) != 0 || len(e.drv.Calls()) != 0 {
				t.Errorf("after unmount: errors %v, calls %q", errs, seq(e.drv.Calls()))
			}
		})
	}
}
