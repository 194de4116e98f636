package node

import (
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// expandDocs is pv-1 (1Gi) of hostpath.csi.k8s.io with a claim whose status
// says 512Mi and no resize fields (the legacy path), and the pods.
func expandDocs(pods ...string) string {
	claim := claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}}")
	return docs(append([]string{noAttachDriver, pvDoc("pv-1", "vol-1", "data-1", "mountOptions: [noatime]", "csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, fsType: xfs}"), claim}, pods...)...)
}

// docs/kubelet.md §15.4: after the mount's expansion the reconciler expands
// the volume again while in use, because the actual state still holds the
// claim's old size: the same request, after the same two capability
// queries, with the trace saying why; a second pod on the volume finds the
// size recorded and expands nothing.
func TestExpandInUseAfterMount(t *testing.T) {
	e := newEnv(t, expandDocs(pod1, podDoc("app-2", "pod-uid-2", claimVol("data", "data-1"))), newFakeDriver(capStage, capExpand))
	e.mountOK("app-1")
	got := seq(byOp(e.drv.Calls(), "ExpandInUseVolume"))
	want := []string{"ExpandInUseVolume:NodeGetCapabilities(EXPAND_VOLUME)", "ExpandInUseVolume:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)", "ExpandInUseVolume:NodeExpandVolume"}
	if !slices.Equal(got, want) {
		t.Fatalf("in-use expansion calls %q, want %q", got, want)
	}
	all := e.drv.Calls()
	if last := all[len(all)-1]; last.Labels.Operation != "ExpandInUseVolume" {
		t.Errorf("last call %s:%s, want the in-use expansion after the mount", last.Labels.Operation, last.Method)
	}
	checkExpand(t, e, "ExpandInUseVolume", 1073741824)
	if !slices.ContainsFunc(e.steps(false), func(s string) bool {
		return strings.HasPrefix(s, "in-use expansion: the kubelet's actual state still has the claim's old size 512Mi")
	}) {
		t.Errorf("no in-use expansion step in %q", e.steps(false))
	}
	e.drv.ClearCalls()
	e.mountOK("app-2")
	if exp := only(e.drv.Calls(), "NodeExpandVolume"); len(exp) != 0 {
		t.Errorf("second pod: %d NodeExpandVolume, want none (the actual state has the new size)", len(exp))
	}
	e.unmountOK("app-2")
	e.unmountOK("app-1")
}

// The source decides what the in-use pass does after a mount whose
// expansion did not grow the volume: a driver that cannot expand in use
// (FailedPrecondition) is not asked again and the mount goes on; a driver
// without EXPAND_VOLUME is asked for its capabilities once more; a failed
// in-use expansion is the volume's VolumeResizeFailed event.
func TestExpandInUseOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		caps      []csi.NodeServiceCapability_RPC_Type
		faults    []error
		wantInUse []string // the in-use pass's calls
		wantErr   string
		wantNote  string // a step that is not a warning: the kubelet only logs it
	}{
		{name: "FailedPrecondition at mount", caps: []csi.NodeServiceCapability_RPC_Type{capStage, capExpand},
			faults:   []error{status.Error(codes.FailedPrecondition, "in use")},
			wantNote: `MountVolume.NodeExpandVolume failed for volume "pv-1" : Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = in use; the kubelet lets the mount go on`},
		{name: "no EXPAND_VOLUME", caps: []csi.NodeServiceCapability_RPC_Type{capStage},
			wantInUse: []string{"ExpandInUseVolume:NodeGetCapabilities(EXPAND_VOLUME)"}},
		{name: "in-use expansion fails", caps: []csi.NodeServiceCapability_RPC_Type{capStage, capExpand},
			faults:    []error{nil, status.Error(codes.Internal, "disk full")},
			wantInUse: []string{"ExpandInUseVolume:NodeGetCapabilities(EXPAND_VOLUME)", "ExpandInUseVolume:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)", "ExpandInUseVolume:NodeExpandVolume"},
			wantErr:   `NodeExpandVolume.NodeExpandVolume failed for volume "pv-1" : Expander.NodeExpand failed to expand the volume : rpc error: code = Internal desc = disk full`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, expandDocs(pod1), newFakeDriver(tc.caps...))
			e.drv.Errors("NodeExpandVolume", tc.faults...)
			res := e.mount("app-1")
			if got := seq(byOp(e.drv.Calls(), "ExpandInUseVolume")); !slices.Equal(got, tc.wantInUse) {
				t.Errorf("in-use expansion calls %q, want %q", got, tc.wantInUse)
			}
			err := res.Volumes[0].Err
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("volume error %v, want none", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("volume error %v, want %q", err, tc.wantErr)
			}
			if tc.wantNote != "" {
				has := func(s string) bool { return strings.HasPrefix(s, tc.wantNote) }
				if !slices.ContainsFunc(e.steps(false), has) || slices.ContainsFunc(e.steps(true), has) {
					t.Errorf("steps %q (warnings %q), want %q and not as a warning", e.steps(false), e.steps(true), tc.wantNote)
				}
			}
			e.unmountOK("app-1")
		})
	}
}

// A filesystem volume of a driver that does not stage is expanded, during
// the mount and in use, with the device mount path as staging path all the
// same (the CSI plugin is a device-mountable plugin for every driver).
func TestExpandInUseWithoutStaging(t *testing.T) {
	e := newEnv(t, expandDocs(pod1), newFakeDriver(capExpand))
	e.mountOK("app-1")
	checkExpand(t, e, "NodeExpand", 1073741824)
	checkExpand(t, e, "ExpandInUseVolume", 1073741824)
	e.unmountOK("app-1")
}
