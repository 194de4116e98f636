package node

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

const capExpand = csi.NodeServiceCapability_RPC_EXPAND_VOLUME

// claimWithStatus is claim data-1 bound to pv-1 with the given access modes,
// status (a YAML flow mapping) and extra metadata lines.
func claimWithStatus(modes, st string, meta ...string) string {
	s := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data-1\n  namespace: default"
	for _, m := range meta {
		s += "\n  " + m
	}
	return s + "\nspec:\n  accessModes: " + modes + "\n  resources: {requests: {storage: 1Gi}}\n  volumeName: pv-1\nstatus: " + st
}

// docs/kubelet.md §15.1: expandVolumeDuringMount after SetUp, when the claim's
// status.capacity is below the PV's (1Gi here), release by release with
// RecoverVolumeExpansionFailure's resize statuses.
func TestExpandDuringMount(t *testing.T) {
	const (
		gi      = 1073741824
		mi768   = 805306368
		pending = "allocatedResourceStatuses: {storage: NodeResizePending}"
	)
	tests := []struct {
		name    string
		minor   int
		gates   string
		caps    []csi.NodeServiceCapability_RPC_Type
		claim   string
		podVol  string
		want    int64  // required_bytes; 0: no NodeExpandVolume
		inUse   int64  // required_bytes of the in-use expansion; 0: none
		wantCap string // the claim's status.capacity afterwards
		note    string // a step of the round
	}{
		{name: "legacy: to the PV's size", minor: 37, claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}}"),
			want: gi, inUse: gi, wantCap: "1Gi", note: "expansion: claim default/data-1 status.capacity is now 1Gi"},
		{name: "claim at the PV's size", minor: 37, claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 1Gi}}"), wantCap: "1Gi"},
		{name: "claim without status", minor: 37, claim: pvc1, wantCap: ""},
		// Not supported by the driver is taken as done, but the claim
		// keeps its size (legacyCallNodeExpandOnPlugin returns before
		// MarkFSResizeFinished).
		{name: "no EXPAND_VOLUME", minor: 37, caps: []csi.NodeServiceCapability_RPC_Type{capStage}, claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}}"),
			wantCap: "512Mi", note: "NodeExpand is not supported by the CSI driver hostpath.csi.k8s.io"},
		{name: "read-only", minor: 37, claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}}"),
			podVol:  "{name: data, persistentVolumeClaim: {claimName: data-1, readOnly: true}}",
			wantCap: "512Mi", note: `MountVolume.NodeExpandVolume failed for volume "pv-1" requested read-only file system`},
		{name: "1.37 NodeResizePending: to allocatedResources", minor: 37,
			claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}, allocatedResources: {storage: 768Mi}, "+pending+"}"),
			want:  mi768, wantCap: "768Mi"},
		{name: "1.37 NodeResizeInProgress", minor: 37,
			claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}, allocatedResources: {storage: 768Mi}, allocatedResourceStatuses: {storage: NodeResizeInProgress}}"),
			want:  mi768, wantCap: "768Mi"},
		{name: "1.37 ControllerResizeInProgress: not the node's turn", minor: 37,
			claim:   claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}, allocatedResources: {storage: 768Mi}, allocatedResourceStatuses: {storage: ControllerResizeInProgress}}"),
			wantCap: "512Mi", note: `expansion: resize status "ControllerResizeInProgress": NodeExpandVolume is not allowed to proceed`},
		{name: "1.30 gate off: legacy even with a resize status", minor: 30,
			claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}, allocatedResources: {storage: 768Mi}, "+pending+"}"),
			want:  gi, inUse: gi, wantCap: "1Gi"},
		// Up to 1.31 the in-use pass's precheck lets a claim already grown
		// through whatever its access modes (from 1.32 only RWX).
		{name: "1.30 gate on", minor: 30, gates: "RecoverVolumeExpansionFailure=true",
			claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}, allocatedResources: {storage: 768Mi}, "+pending+"}"),
			want:  mi768, inUse: mi768, wantCap: "768Mi"},
		{name: "1.31 gate off: the claim's status decides", minor: 31,
			claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}, allocatedResources: {storage: 768Mi}, "+pending+"}"),
			want:  mi768, inUse: mi768, wantCap: "768Mi"},
		{name: "1.32 NodeResizePending: no in-use call", minor: 32,
			claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}, allocatedResources: {storage: 768Mi}, "+pending+"}"),
			want:  mi768, wantCap: "768Mi"},
		{name: "1.33 gate off, no resize fields: legacy", minor: 33, gates: "RecoverVolumeExpansionFailure=false",
			claim: claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}}"),
			want:  gi, inUse: gi, wantCap: "1Gi"},
		// The in-use pass's precheck lets an RWX claim already grown
		// through again.
		{name: "RWX grown by the controller: expanded on the node", minor: 37,
			claim: claimWithStatus("[ReadWriteMany]", "{phase: Bound, capacity: {storage: 768Mi}, allocatedResources: {storage: 768Mi}}"),
			want:  mi768, inUse: mi768, wantCap: "768Mi"},
		{name: "RWX grown, node expansion not required: 1.33 ignores the annotation", minor: 33,
			claim: claimWithStatus("[ReadWriteMany]", "{phase: Bound, capacity: {storage: 768Mi}, allocatedResources: {storage: 768Mi}}", "annotations: {volume.kubernetes.io/node-expansion-not-required: 'true'}"),
			want:  mi768, inUse: mi768, wantCap: "768Mi"},
		{name: "RWX grown, node expansion not required", minor: 37,
			claim:   claimWithStatus("[ReadWriteMany]", "{phase: Bound, capacity: {storage: 768Mi}, allocatedResources: {storage: 768Mi}}", "annotations: {volume.kubernetes.io/node-expansion-not-required: 'true'}"),
			wantCap: "768Mi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			caps := tc.caps
			if caps == nil {
				caps = []csi.NodeServiceCapability_RPC_Type{capStage, capExpand}
			}
			podVol := tc.podVol
			if podVol == "" {
				podVol = claimVol("data", "data-1")
			}
			m := docs(noAttachDriver, pvDoc("pv-1", "vol-1", "data-1", "mountOptions: [noatime]", "csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, fsType: xfs}"),
				tc.claim, podDoc("app-1", "pod-uid-1", podVol))
			e := newEnv(t, m, newFakeDriver(caps...), withGates(t, tc.minor, tc.gates))
			e.mountOK("app-1")
			for op, size := range map[string]int64{"NodeExpand": tc.want, "ExpandInUseVolume": tc.inUse} {
				checkExpand(t, e, op, size)
			}
			pvc, _ := e.cluster.PersistentVolumeClaim("default", "data-1")
			got := ""
			if q, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
				got = q.String()
			}
			if got != tc.wantCap {
				t.Errorf("claim status.capacity %q, want %q", got, tc.wantCap)
			}
			if tc.want != 0 {
				if _, ok := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; ok {
					t.Errorf("resize status kept after the expansion: %v", pvc.Status.AllocatedResourceStatuses)
				}
			}
			if tc.note != "" && !slices.Contains(e.steps(false), tc.note) {
				t.Errorf("steps %q, want %q", e.steps(false), tc.note)
			}
		})
	}
}

// byOp are the calls the kubelet made in one operation (the trace's label).
func byOp(calls []csifake.Call, op string) []csifake.Call {
	var out []csifake.Call
	for _, c := range calls {
		if c.Labels.Operation == op {
			out = append(out, c)
		}
	}
	return out
}

// checkExpand checks the NodeExpandVolume of one operation (the mount's
// "NodeExpand" or the reconciler's "ExpandInUseVolume") for pv-1 of
// TestExpandDuringMount: size 0, none.
func checkExpand(t *testing.T, e *testEnv, op string, size int64) {
	t.Helper()
	calls := byOp(e.drv.Calls(), op)
	if size == 0 {
		if exp := only(calls, "NodeExpandVolume"); len(exp) != 0 {
			t.Errorf("%s: NodeExpandVolume %v, want none", op, exp[0].Request)
		}
		return
	}
	req := one[*csi.NodeExpandVolumeRequest](t, calls, "NodeExpandVolume")
	want := &csi.NodeExpandVolumeRequest{
		VolumeId:          "vol-1",
		VolumePath:        targetPV1(e.root),
		StagingTargetPath: globalmountVol1(e.root),
		CapacityRange:     &csi.CapacityRange{RequiredBytes: size},
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "xfs", MountFlags: []string{"noatime"}}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: req.GetVolumeCapability().GetAccessMode().GetMode()},
		},
		Secrets: map[string]string{},
	}
	protoEqual(t, op+" NodeExpandVolume", req, want)
}

// A failed NodeExpandVolume fails the mount, in the kubelet's words; the
// expand secret is read (NodeExpandSecretRef) and sent.
func TestNodeExpandFailuresAndSecret(t *testing.T) {
	claim := claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}}")
	withRef := pvDoc("pv-1", "vol-1", "data-1", "csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, nodeExpandSecretRef: {name: expand, namespace: storage}}")
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: expand, namespace: storage}\nstringData: {key: s3cret}"
	tests := []struct {
		name      string
		manifests string
		fault     error
		wantErr   string
		secrets   map[string]string
	}{
		{name: "driver error", manifests: docs(noAttachDriver, pv1, claim, pod1), fault: status.Error(codes.Internal, "disk full"),
			wantErr: `MountVolume.Setup failed while expanding volume for volume "pv-1" : Expander.NodeExpand failed to expand the volume : rpc error: code = Internal desc = disk full`},
		{name: "secret sent", manifests: docs(noAttachDriver, withRef, claim, pod1, secret), secrets: map[string]string{"key": "s3cret"}},
		{name: "secret missing", manifests: docs(noAttachDriver, withRef, claim, pod1),
			wantErr: `expander.NodeExpand failed to get NodeExpandSecretRef storage/expand: `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver(capStage, capExpand))
			if tc.fault != nil {
				e.drv.Errors("NodeExpandVolume", tc.fault)
			}
			res := e.mount("app-1")
			if tc.wantErr == "" {
				if err := res.Volumes[0].Err; err != nil {
					t.Fatal(err)
				}
				// The mount's expansion, then the reconciler's in-use one.
				for _, op := range []string{"NodeExpand", "ExpandInUseVolume"} {
					got := one[*csi.NodeExpandVolumeRequest](t, byOp(e.drv.Calls(), op), "NodeExpandVolume").GetSecrets()
					if !maps.Equal(got, tc.secrets) {
						t.Errorf("%s: secrets %v, want %v", op, got, tc.secrets)
					}
				}
				return
			}
			ve := volErr(t, res)
			if !strings.Contains(ve.Error(), tc.wantErr) {
				t.Errorf("error %q, want %q in it", ve, tc.wantErr)
			}
			// The volume is published; teardown still unpublishes it.
			e.drv.ClearCalls()
			e.unmountOK("app-1")
			if n := len(only(e.drv.Calls(), "NodeUnpublishVolume")); n != 1 {
				t.Errorf("%d NodeUnpublishVolume after the failed expansion, want 1", n)
			}
		})
	}
}

// A block volume is expanded at the device path MapPodDevice published,
// with the staging path only when this map staged it; the reconciler's
// in-use expansion that follows sends the block mapper's staging path
// whether or not the driver stages (GenerateExpandInUseVolumeFunc).
func TestExpandBlock(t *testing.T) {
	claim := claimWithStatus("[ReadWriteOnce]", "{phase: Bound, capacity: {storage: 512Mi}}")
	m := docs(noAttachDriver, pvDoc("pv-1", "vol-1", "data-1", "volumeMode: Block"), claim, blockPod1)
	for _, tc := range []struct {
		caps        []csi.NodeServiceCapability_RPC_Type
		wantStaging bool
	}{
		{[]csi.NodeServiceCapability_RPC_Type{capStage, capExpand}, true},
		{[]csi.NodeServiceCapability_RPC_Type{capExpand}, false},
	} {
		t.Run(fmt.Sprintf("staging=%t", tc.wantStaging), func(t *testing.T) {
			e := newEnv(t, m, newFakeDriver(tc.caps...), dryRun)
			e.mountOK("app-1")
			staging := e.root + "/plugins/kubernetes.io/csi/volumeDevices/staging/pv-1"
			for _, op := range []string{"NodeExpand", "ExpandInUseVolume"} {
				req := one[*csi.NodeExpandVolumeRequest](t, byOp(e.drv.Calls(), op), "NodeExpandVolume")
				if want := e.root + "/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/pod-uid-1"; req.GetVolumePath() != want {
					t.Errorf("%s: volume_path %q, want %q", op, req.GetVolumePath(), want)
				}
				wantStaging := staging
				if op == "NodeExpand" && !tc.wantStaging {
					wantStaging = ""
				}
				if req.GetStagingTargetPath() != wantStaging {
					t.Errorf("%s: staging_target_path %q, want %q", op, req.GetStagingTargetPath(), wantStaging)
				}
				if req.GetVolumeCapability().GetBlock() == nil || req.GetCapacityRange().GetRequiredBytes() != 1073741824 {
					t.Errorf("%s: capability %v, range %v; want Block, 1Gi", op, req.GetVolumeCapability(), req.GetCapacityRange())
				}
			}
			e.unmountOK("app-1")
		})
	}
}
