package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// protoEqual fails the test with both messages in text form when they differ.
func protoEqual(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, prototext.Format(got), prototext.Format(want))
	}
}

// NodeStage carries the handle, globalmount, the PV's access mode, fsType
// and mountOptions, only the PV's volumeAttributes, and the stage secret
// (docs/kubelet.md §1.3, §3, §8, §9).
func TestNodeStageRequest(t *testing.T) {
	e := newEnv(t, docs(
		csiDriverDoc("attachRequired: false", "podInfoOnMount: true"),
		pvDoc("pv-1", "vol-1", "data-1",
			"accessModes: [ReadWriteMany]",
			"mountOptions: [noatime, nfsvers=4.1]",
			"csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, fsType: ext4, volumeAttributes: {size: small}, nodeStageSecretRef: {name: stage-secret, namespace: storage}}"),
		pvc1, pod1,
		"apiVersion: v1\nkind: Secret\nmetadata: {name: stage-secret, namespace: storage}\nstringData: {key: s3cr3t}",
	), newFakeDriver(capStage))
	e.mountOK("app-1")

	got := one[*csi.NodeStageVolumeRequest](t, e.drv.Calls(), "NodeStageVolume")
	want := &csi.NodeStageVolumeRequest{
		VolumeId:          "vol-1",
		StagingTargetPath: e.root + "/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount",
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
				FsType: "ext4", MountFlags: []string{"noatime", "nfsvers=4.1"},
			}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		},
		Secrets:       map[string]string{"key": "s3cr3t"},
		VolumeContext: map[string]string{"size": "small"},
	}
	protoEqual(t, "NodeStageVolumeRequest", got, want)
}

// The pvDoc "csi:" extra line replaces the default csi block; make sure the
// manifest above parsed as meant.
func TestPVDocOverride(t *testing.T) {
	c := loadManifests(t, pvDoc("pv-1", "vol-1", "data-1", "csi: {driver: d, volumeHandle: h, fsType: xfs}"))
	pv, _ := c.PersistentVolume("pv-1")
	if pv.Spec.CSI.FSType != "xfs" || pv.Spec.CSI.VolumeHandle != "h" {
		t.Fatalf("override not applied: %+v", pv.Spec.CSI)
	}
}

// docs/kubelet.md §1.5, §1.6: MountDevice creates globalmount itself and writes the
// staging vol_data.json (volumeHandle, driverName; sorted, newline) beside
// it before NodeStage.
func TestStagingDirAndVolDataBeforeNodeStage(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
	e.mountOK("app-1")

	c := only(e.drv.Calls(), "NodeStageVolume")[0]
	if !seen(c).StagingExisted {
		t.Errorf("globalmount did not exist at NodeStage")
	}
	const wantVolData = `{"driverName":"hostpath.csi.k8s.io","volumeHandle":"vol-1"}` + "\n"
	if seen(c).VolData != wantVolData {
		t.Errorf("vol_data.json at NodeStage = %q, want %q", seen(c).VolData, wantVolData)
	}
	shaDir := e.root + "/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/" + sha256Vol1
	if got := readFile(shaDir + "/vol_data.json"); got != wantVolData {
		t.Errorf("vol_data.json after mount = %q, want %q", got, wantVolData)
	}
	fi, err := os.Stat(shaDir + "/globalmount")
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("globalmount: %v, %v; want a 0750 directory", fi, err)
	}
}

// docs/kubelet.md §1.7: after NodeUnstage the kubelet removes globalmount,
// vol_data.json and <sha>; the <driver> dir stays.
func TestUnstageRemovesStagingDirs(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
	e.mountOK("app-1")
	e.unmountOK("app-1")

	driverDir := e.root + "/plugins/kubernetes.io/csi/hostpath.csi.k8s.io"
	for _, p := range []string{driverDir + "/" + sha256Vol1 + "/globalmount", driverDir + "/" + sha256Vol1 + "/vol_data.json", driverDir + "/" + sha256Vol1} {
		if exists(p) {
			t.Errorf("%s still exists after NodeUnstage", p)
		}
	}
	if !isDir(driverDir) {
		t.Errorf("%s removed; the kubelet keeps it", driverDir)
	}
	req := one[*csi.NodeUnstageVolumeRequest](t, e.drv.Calls(), "NodeUnstageVolume")
	protoEqual(t, "NodeUnstageVolumeRequest", req, &csi.NodeUnstageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: globalmountVol1(e.root)})
}

// docs/kubelet.md §1.5, §1.7, §21.4: without STAGE_UNSTAGE_VOLUME, MountDevice
// still creates an empty globalmount, writes no vol_data.json and sends no
// NodeStage; UnmountDevice then makes no call and removes nothing.
func TestMountDeviceWithoutStage(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver())
	res := e.mountOK("app-1")

	gm := globalmountVol1(e.root)
	entries, err := os.ReadDir(gm)
	if err != nil || len(entries) != 0 {
		t.Errorf("globalmount: entries %v, err %v; want an empty directory", entries, err)
	}
	if exists(filepath.Dir(gm) + "/vol_data.json") {
		t.Errorf("staging vol_data.json written for a driver that does not stage")
	}
	if n := len(only(e.drv.Calls(), "NodeStageVolume")); n != 0 {
		t.Errorf("%d NodeStageVolume calls", n)
	}
	if res.Volumes[0].StagingPath != "" {
		t.Errorf("VolumeResult.StagingPath = %q, want empty", res.Volumes[0].StagingPath)
	}
	pub := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume")
	if pub.GetStagingTargetPath() != "" {
		t.Errorf("NodePublish staging_target_path = %q, want empty (docs/kubelet.md §1.3)", pub.GetStagingTargetPath())
	}

	e.drv.ClearCalls()
	e.unmountOK("app-1")
	if got, want := seq(e.drv.Calls()), []string{"TearDown:NodeUnpublishVolume"}; !slices.Equal(got, want) {
		t.Errorf("teardown calls = %q, want %q", got, want)
	}
	if !isDir(gm) {
		t.Errorf("globalmount removed; the kubelet leaves the empty directory")
	}
}

// Up to 1.33 MountDevice writes the staging vol_data.json before it checks
// STAGE_UNSTAGE_VOLUME (csi_attacher.go MountDevice, v1.33.13): a driver that
// does not stage finds it, and UnmountDevice asks STAGE_UNSTAGE_VOLUME once
// more and removes the staging dirs.
func TestMountDeviceWithoutStageUpTo133(t *testing.T) {
	for _, tc := range []struct {
		minor    int
		volData  bool
		teardown []string
	}{
		{33, true, []string{"TearDown:NodeUnpublishVolume", "UnmountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)"}},
		{34, false, []string{"TearDown:NodeUnpublishVolume"}},
	} {
		t.Run(fmt.Sprintf("1.%d", tc.minor), func(t *testing.T) {
			e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(), withVersion(tc.minor))
			e.mountOK("app-1")
			gm := globalmountVol1(e.root)
			if got := exists(filepath.Dir(gm) + "/vol_data.json"); got != tc.volData {
				t.Errorf("staging vol_data.json written: %v, want %v", got, tc.volData)
			}
			e.drv.ClearCalls()
			e.unmountOK("app-1")
			if got := seq(e.drv.Calls()); !slices.Equal(got, tc.teardown) {
				t.Errorf("teardown calls = %q, want %q", got, tc.teardown)
			}
			if got := exists(filepath.Dir(gm)); got == tc.volData {
				t.Errorf("staging dir %s exists: %v, want %v", filepath.Dir(gm), got, !tc.volData)
			}
		})
	}
}

// docs/kubelet.md §1.7: vol_data.json present but the driver no longer reports
// STAGE_UNSTAGE_VOLUME: one capability query, no NodeUnstage, and the
// kubelet removes the staging dirs.
func TestUnmountDeviceDriverLostStage(t *testing.T) {
	drv := newFakeDriver(capStage)
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
	e.mountOK("app-1")
	drv.Update(func(c *csifake.Config) { c.Capabilities = nil })
	drv.ClearCalls()
	e.unmountOK("app-1")
	want := []string{"TearDown:NodeUnpublishVolume", "UnmountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)"}
	if got := seq(drv.Calls()); !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	if exists(filepath.Dir(globalmountVol1(e.root))) {
		t.Errorf("<sha> dir not removed")
	}
}

// docs/kubelet.md §9: the stage secret is read only when the driver stages; NodeStage
// gets {} without a ref; a missing secret is transient, before globalmount is
// made and without any NodeStage.
func TestStageSecret(t *testing.T) {
	pvWithRef := pvDoc("pv-1", "vol-1", "data-1",
		"csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, nodeStageSecretRef: {name: stage-secret, namespace: storage}}")
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: stage-secret, namespace: storage}\ndata: {user: YWRtaW4=}"

	t.Run("no ref: empty secrets", func(t *testing.T) {
		e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
		e.mountOK("app-1")
		if s := one[*csi.NodeStageVolumeRequest](t, e.drv.Calls(), "NodeStageVolume").GetSecrets(); len(s) != 0 {
			t.Errorf("secrets = %v, want {}", s)
		}
	})
	t.Run("ref, secret data sent as strings", func(t *testing.T) {
		e := newEnv(t, docs(noAttachDriver, pvWithRef, pvc1, pod1, secret), newFakeDriver(capStage))
		e.mountOK("app-1")
		got := one[*csi.NodeStageVolumeRequest](t, e.drv.Calls(), "NodeStageVolume").GetSecrets()
		if len(got) != 1 || got["user"] != "admin" {
			t.Errorf("secrets = %v, want {user: admin}", got)
		}
	})
	t.Run("missing secret, driver without STAGE: not read", func(t *testing.T) {
		e := newEnv(t, docs(noAttachDriver, pvWithRef, pvc1, pod1), newFakeDriver())
		e.mountOK("app-1")
	})
	t.Run("missing secret, driver with STAGE: transient", func(t *testing.T) {
		e := newEnv(t, docs(noAttachDriver, pvWithRef, pvc1, pod1), newFakeDriver(capStage))
		ve := volErr(t, e.mount("app-1"))
		const want = `fetching NodeStageSecretRef storage/stage-secret failed: kubernetes.io/csi: failed to find the secret stage-secret in the namespace storage with error: secrets "stage-secret" not found`
		if ve.Err.Error() != want {
			t.Errorf("error = %q\nwant %q", ve.Err, want)
		}
		if ve.Kind != csiplugin.Transient || ve.Operation != "MountVolume.MountDevice" {
			t.Errorf("kind, operation = %v, %q; want transient, MountVolume.MountDevice", ve.Kind, ve.Operation)
		}
		if got, want := seq(e.drv.Calls()), []string{"MountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)"}; !slices.Equal(got, want) {
			t.Errorf("calls = %q, want %q", got, want)
		}
		if exists(globalmountVol1(e.root)) {
			t.Errorf("globalmount created before the secret was read")
		}
		// Transient: no device state, so no unstage on teardown.
		e.drv.ClearCalls()
		e.unmountOK("app-1")
		if calls := e.drv.Calls(); len(calls) != 0 {
			t.Errorf("teardown calls %q, want none", seq(calls))
		}
	})
}

// Someone else's directory where the volume's device dir goes: the
// simulator refuses to touch it, says so, and makes no call to stage.
func TestDeviceDirInTheWay(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
	gm := globalmountVol1(e.root)
	if err := os.MkdirAll(gm, 0o750); err != nil {
		t.Fatal(err)
	}
	ve := volErr(t, e.mount("app-1"))
	if !rootdir.IsInTheWay(ve) {
		t.Fatalf("error = %v, want the device dir in the way", ve)
	}
	if n := len(only(e.drv.Calls(), "NodeStageVolume")); n != 0 {
		t.Errorf("%d NodeStage calls", n)
	}
	e.k.vm.UnmountPod(context.Background(), e.pod("app-1"), false)
	e.k.vm.Cleanup(context.Background(), false)
	if !exists(gm) {
		t.Errorf("someone else's %s was removed", gm)
	}
}

// docs/kubelet.md §1.5: a non-directory at globalmount fails MountDevice.
func TestGlobalmountIsAFile(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
	gm := globalmountVol1(e.root)
	// Made as the simulator's own, so that the kubelet's check refuses it
	// rather than the ownership check.
	if err := e.k.vm.FS.MkdirAll(filepath.Dir(gm), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gm, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ve := volErr(t, e.mount("app-1"))
	want := "kubernetes.io/csi: attacher.MountDevice failed to create dir \"" + gm + "\":  path " + gm + " exists but is not a directory"
	if ve.Err.Error() != want {
		t.Errorf("error = %q\nwant %q", ve.Err, want)
	}
	if n := len(only(e.drv.Calls(), "NodeStageVolume")); n != 0 {
		t.Errorf("%d NodeStage calls", n)
	}
}
