package node

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// The exact calls of each kubelet operation and the capability queries
// before them (docs/kubelet.md §11, §21.1, §1.5, §1.7).
func TestCallSequence(t *testing.T) {
	inlineDriver := csiDriverDoc("attachRequired: false", "volumeLifecycleModes: [Ephemeral]")
	tests := []struct {
		name      string
		manifests string
		caps      []csi.NodeServiceCapability_RPC_Type
		wantMount []string
		wantTear  []string
	}{
		{
			name:      "PV, driver with STAGE_UNSTAGE_VOLUME",
			manifests: docs(noAttachDriver, pv1, pvc1, pod1),
			caps:      []csi.NodeServiceCapability_RPC_Type{capStage},
			wantMount: []string{
				"MountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
				"MountDevice:NodeGetCapabilities(VOLUME_MOUNT_GROUP)",
				"MountDevice:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)",
				"MountDevice:NodeStageVolume",
				"SetUp:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
				"SetUp:NodeGetCapabilities(VOLUME_MOUNT_GROUP)",
				"SetUp:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)",
				"SetUp:NodePublishVolume",
			},
			wantTear: []string{
				"TearDown:NodeUnpublishVolume",
				"UnmountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
				"UnmountDevice:NodeUnstageVolume",
			},
		},
		{
			name:      "PV, driver without STAGE_UNSTAGE_VOLUME",
			manifests: docs(noAttachDriver, pv1, pvc1, pod1),
			caps:      nil,
			wantMount: []string{
				"MountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
				"SetUp:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
				"SetUp:NodeGetCapabilities(VOLUME_MOUNT_GROUP)",
				"SetUp:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)",
				"SetUp:NodePublishVolume",
			},
			wantTear: []string{"TearDown:NodeUnpublishVolume"},
		},
		{
			name:      "inline volume",
			manifests: docs(inlineDriver, podDoc("app-1", "pod-uid-1", inlineVol("scratch", ""))),
			caps:      nil,
			wantMount: []string{
				"SetUp:NodeGetCapabilities(VOLUME_MOUNT_GROUP)",
				"SetUp:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)",
				"SetUp:NodePublishVolume",
			},
			wantTear: []string{"TearDown:NodeUnpublishVolume"},
		},
		{
			name:      "inline volume, driver with STAGE_UNSTAGE_VOLUME: still no staging",
			manifests: docs(inlineDriver, podDoc("app-1", "pod-uid-1", inlineVol("scratch", ""))),
			caps:      []csi.NodeServiceCapability_RPC_Type{capStage, capSNMW, capVMG},
			wantMount: []string{
				"SetUp:NodeGetCapabilities(VOLUME_MOUNT_GROUP)",
				"SetUp:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)",
				"SetUp:NodePublishVolume",
			},
			wantTear: []string{"TearDown:NodeUnpublishVolume"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver(tc.caps...))
			e.mountOK("app-1")
			if got := seq(e.drv.Calls()); !slices.Equal(got, tc.wantMount) {
				t.Errorf("mount calls:\n got %q\nwant %q", got, tc.wantMount)
			}
			e.drv.ClearCalls()
			e.unmountOK("app-1")
			if got := seq(e.drv.Calls()); !slices.Equal(got, tc.wantTear) {
				t.Errorf("teardown calls:\n got %q\nwant %q", got, tc.wantTear)
			}
		})
	}
}

// A device used by two pods is staged once, and unstaged only after both
// pods' NodeUnpublish (docs/kubelet.md §12, teardown order).
func TestSharedDeviceUnstagedAfterLastPod(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1,
		podDoc("app-2", "pod-uid-2", claimVol("shared", "data-1"))), newFakeDriver(capStage))

	e.mountOK("app-1")
	e.drv.ClearCalls()
	e.mountOK("app-2")
	wantSecond := []string{
		"SetUp:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
		"SetUp:NodeGetCapabilities(VOLUME_MOUNT_GROUP)",
		"SetUp:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)",
		"SetUp:NodePublishVolume",
	}
	if got := seq(e.drv.Calls()); !slices.Equal(got, wantSecond) {
		t.Errorf("second pod: device already staged, want only SetUp:\n got %q\nwant %q", got, wantSecond)
	}
	req := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume")
	if got, want := req.GetTargetPath(), e.root+"/pods/pod-uid-2/volumes/kubernetes.io~csi/pv-1/mount"; got != want {
		t.Errorf("second pod target_path = %q, want %q", got, want)
	}

	e.drv.ClearCalls()
	e.unmountOK("app-1")
	if got, want := seq(e.drv.Calls()), []string{"TearDown:NodeUnpublishVolume"}; !slices.Equal(got, want) {
		t.Errorf("first pod deleted: got %q, want %q (no unstage while app-2 uses the device)", got, want)
	}
	if !isDir(globalmountVol1(e.root)) {
		t.Errorf("globalmount removed while app-2 still uses it")
	}

	e.drv.ClearCalls()
	e.unmountOK("app-2")
	want := []string{
		"TearDown:NodeUnpublishVolume",
		"UnmountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
		"UnmountDevice:NodeUnstageVolume",
	}
	if got := seq(e.drv.Calls()); !slices.Equal(got, want) {
		t.Errorf("last pod deleted:\n got %q\nwant %q", got, want)
	}
}

// docs/kubelet.md §8: a PV whose only access mode is ReadWriteOncePod cannot be
// mounted by a second pod on the node.
func TestReadWriteOncePodSecondPod(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver,
		pvDoc("pv-1", "vol-1", "data-1", "accessModes: [ReadWriteOncePod]"), pvc1, pod1,
		podDoc("app-2", "pod-uid-2", claimVol("data", "data-1"))), newFakeDriver(capStage))
	e.mountOK("app-1")
	e.drv.ClearCalls()

	ve := volErr(t, e.mount("app-2"))
	const want = `MountVolume.SetUp failed for volume "pv-1" : volume uses the ReadWriteOncePod access mode and is already in use by another pod`
	if ve.Error() != want {
		t.Errorf("error = %q, want %q", ve.Error(), want)
	}
	if calls := e.drv.Calls(); len(calls) != 0 {
		t.Errorf("second pod reached the driver: %q", seq(calls))
	}

	// Once the first pod is gone, the second one mounts.
	e.unmountOK("app-1")
	e.drv.ClearCalls()
	e.mountOK("app-2")
}

// docs/kubelet.md §2: the lifecycle mode check at the start of SetUpAt, its exact
// texts, and that it is transient (no RPC of SetUp, nothing to clean up).
func TestVolumeLifecycleModeCheck(t *testing.T) {
	tests := []struct {
		name      string
		manifests string
		want      string
	}{
		{
			name:      "inline, no CSIDriver object",
			manifests: podDoc("app-1", "pod-uid-1", inlineVol("scratch", "")),
			want:      `kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver hostpath.csi.k8s.io (no CSIDriver object)`,
		},
		{
			name:      "inline, CSIDriver defaulted to Persistent only",
			manifests: docs(noAttachDriver, podDoc("app-1", "pod-uid-1", inlineVol("scratch", ""))),
			want:      `kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver hostpath.csi.k8s.io (only supports ["Persistent"])`,
		},
		{
			name:      "PV, CSIDriver lists only Ephemeral",
			manifests: docs(csiDriverDoc("attachRequired: false", "volumeLifecycleModes: [Ephemeral]"), pv1, pvc1, pod1),
			want:      `kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Persistent" not supported by driver hostpath.csi.k8s.io (only supports ["Ephemeral"])`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver())
			ve := volErr(t, e.mount("app-1"))
			if ve.Err.Error() != tc.want {
				t.Errorf("error = %q, want %q", ve.Err, tc.want)
			}
			if ve.Kind != csiplugin.Transient {
				t.Errorf("kind = %v, want transient", ve.Kind)
			}
			if ve.Operation != "MountVolume.SetUp" {
				t.Errorf("operation = %q, want MountVolume.SetUp", ve.Operation)
			}
			for _, c := range e.drv.Calls() {
				if c.Labels.Operation == "SetUp" {
					t.Errorf("SetUp reached the driver: %s", c.Method)
				}
			}
			if entries, _ := os.ReadDir(e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi"); len(entries) != 0 {
				t.Errorf("SetUp created volume dirs: %v", entries)
			}
		})
	}
}

// Both lifecycle modes listed: both kinds mount.
func TestVolumeLifecycleModeBoth(t *testing.T) {
	e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "volumeLifecycleModes: [Persistent, Ephemeral]"),
		pv1, pvc1, podDoc("app-1", "pod-uid-1", claimVol("data", "data-1"), inlineVol("scratch", ""))), newFakeDriver())
	res := e.mountOK("app-1")
	got := []string{string(res.Volumes[0].Mode), string(res.Volumes[1].Mode)}
	if want := []string{"Persistent", "Ephemeral"}; !slices.Equal(got, want) {
		t.Errorf("modes = %q, want %q", got, want)
	}
}

// docs/kubelet.md §13: a volume naming a driver that is not registered fails
// with the kubelet's text, as a transient error, before any RPC.
func TestVolumeOfUnregisteredDriver(t *testing.T) {
	const other = "other.csi.example.com"
	otherPV := strings.ReplaceAll(pv1, "driver: "+testDriver, "driver: "+other)
	otherDriver := strings.ReplaceAll(noAttachDriver, "name: "+testDriver, "name: "+other)
	tests := []struct {
		name      string
		manifests string
		wantOp    string
		want      string
	}{
		{
			name:      "PV",
			manifests: docs(otherDriver, otherPV, pvc1, pod1),
			wantOp:    "MountVolume.MountDevice",
			want:      "kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name other.csi.example.com not found in the list of registered CSI drivers",
		},
		{
			name: "inline",
			manifests: docs(strings.ReplaceAll(csiDriverDoc("volumeLifecycleModes: [Ephemeral]"), "name: "+testDriver, "name: "+other),
				podDoc("app-1", "pod-uid-1", "{name: scratch, csi: {driver: other.csi.example.com}}")),
			wantOp: "MountVolume.SetUp",
			want:   "kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name other.csi.example.com not found in the list of registered CSI drivers",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver(capStage))
			ve := volErr(t, e.mount("app-1"))
			if ve.Err.Error() != tc.want {
				t.Errorf("error = %q, want %q", ve.Err, tc.want)
			}
			if ve.Operation != tc.wantOp || ve.Kind != csiplugin.Transient {
				t.Errorf("operation, kind = %q, %v; want %q, transient", ve.Operation, ve.Kind, tc.wantOp)
			}
			if calls := e.drv.Calls(); len(calls) != 0 {
				t.Errorf("driver called: %q", seq(calls))
			}
		})
	}
}

// The pod's data dirs are pre-created with 0750 (docs/kubelet.md §1.1).
func TestMakePodDataDirs(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver())
	e.mountOK("app-1")
	for _, d := range []string{"/pods/pod-uid-1", "/pods/pod-uid-1/volumes", "/pods/pod-uid-1/plugins"} {
		fi, err := os.Stat(e.root + d)
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o750 {
			t.Errorf("%s: mode %v, want a 0750 directory", d, fi.Mode())
		}
	}
}
