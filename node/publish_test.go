package node

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// NodePublish for a PV on a staging driver (docs/kubelet.md §1.2, §1.3, §3, §8).
func TestNodePublishRequestPV(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver,
		pvDoc("pv-1", "vol-1", "data-1",
			"mountOptions: [noatime]",
			"csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, fsType: xfs, volumeAttributes: {size: small}}"),
		pvc1, pod1), newFakeDriver(capStage))
	e.mountOK("app-1")

	got := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume")
	want := &csi.NodePublishVolumeRequest{
		VolumeId:          "vol-1",
		StagingTargetPath: e.root + "/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount",
		TargetPath:        e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1/mount",
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "xfs", MountFlags: []string{"noatime"}}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
		Readonly:      false,
		Secrets:       map[string]string{},
		VolumeContext: map[string]string{"size": "small"},
	}
	protoEqual(t, "NodePublishVolumeRequest", got, want)
}

// NodePublish for an inline volume (docs/kubelet.md §2): generated handle, no
// staging path, no mount flags, fsType and readOnly from the inline source,
// access mode forced to the RWO mapping, volumeAttributes as the base.
func TestNodePublishRequestInline(t *testing.T) {
	tests := []struct {
		name     string
		caps     []csi.NodeServiceCapability_RPC_Type
		csi      string
		wantMode csi.VolumeCapability_AccessMode_Mode
		wantFS   string
		wantRO   bool
	}{
		{"defaults", []csi.NodeServiceCapability_RPC_Type{capStage}, "", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "", false},
		{"fsType and readOnly", nil, "fsType: ext4, readOnly: true", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "ext4", true},
		{"driver with SINGLE_NODE_MULTI_WRITER", []csi.NodeServiceCapability_RPC_Type{capSNMW}, "volumeAttributes: {foo: bar}", csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, docs(csiDriverDoc("volumeLifecycleModes: [Ephemeral]"),
				podDoc("app-1", "pod-uid-1", inlineVol("scratch", tc.csi))), newFakeDriver(tc.caps...))
			e.mountOK("app-1")
			got := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume")
			want := &csi.NodePublishVolumeRequest{
				VolumeId:   "csi-c5699e390261e9e6987cb40a451a4e699b550c7b5f2b6574fc12407e6f10fb2f",
				TargetPath: e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/scratch/mount",
				VolumeCapability: &csi.VolumeCapability{
					AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: tc.wantFS}},
					AccessMode: &csi.VolumeCapability_AccessMode{Mode: tc.wantMode},
				},
				Readonly: tc.wantRO,
				Secrets:  map[string]string{},
			}
			if strings.Contains(tc.csi, "foo: bar") {
				want.VolumeContext = map[string]string{"foo": "bar"}
			}
			protoEqual(t, "NodePublishVolumeRequest", got, want)
			if got.GetVolumeCapability().GetMount() == nil {
				t.Errorf("volume_capability.mount missing")
			}
			if n := len(only(e.drv.Calls(), "NodeStageVolume")); n != 0 {
				t.Errorf("%d NodeStage calls for an inline volume", n)
			}
		})
	}
}

// docs/kubelet.md §1.5, §1.6: at NodePublish the parent of the target exists, the
// target itself does not, and vol_data.json (six keys, sorted, newline) is
// already written.
func TestPublishDirsAndVolData(t *testing.T) {
	tests := []struct {
		name       string
		manifests  string
		wantVolDir string
		want       string
	}{
		{
			name:       "PV",
			manifests:  docs(noAttachDriver, pv1, pvc1, pod1),
			wantVolDir: "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1",
			want: `{"attachmentID":"csi-a5a2e67339ab5660a390dc86be397e784322823ff01f40cf2c01a72c3cab1374",` +
				`"driverName":"hostpath.csi.k8s.io","nodeName":"node-1","specVolID":"pv-1",` +
				`"volumeHandle":"vol-1","volumeLifecycleMode":"Persistent"}` + "\n",
		},
		{
			// attachmentID is computed even though inline volumes are never attached.
			name:       "inline",
			manifests:  docs(csiDriverDoc("volumeLifecycleModes: [Ephemeral]"), podDoc("app-1", "pod-uid-1", inlineVol("scratch", ""))),
			wantVolDir: "/pods/pod-uid-1/volumes/kubernetes.io~csi/scratch",
			want: `{"attachmentID":"csi-02f94dbc712e83721418d06d882262c5c415916fe487c3542fd72a3ab0fd6885",` +
				`"driverName":"hostpath.csi.k8s.io","nodeName":"node-1","specVolID":"scratch",` +
				`"volumeHandle":"csi-c5699e390261e9e6987cb40a451a4e699b550c7b5f2b6574fc12407e6f10fb2f","volumeLifecycleMode":"Ephemeral"}` + "\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver(capStage))
			e.mountOK("app-1")
			c := only(e.drv.Calls(), "NodePublishVolume")[0]
			if !seen(c).ParentExisted {
				t.Errorf("parent of target_path missing at NodePublish")
			}
			if seen(c).TargetExisted {
				t.Errorf("target_path existed at NodePublish; the kubelet leaves it to the driver")
			}
			if seen(c).VolData != tc.want {
				t.Errorf("vol_data.json at NodePublish:\n got %q\nwant %q", seen(c).VolData, tc.want)
			}
			volDir := e.root + tc.wantVolDir
			fi, err := os.Stat(volDir)
			if err != nil || fi.Mode().Perm() != 0o750 {
				t.Errorf("%s: %v %v; want a 0750 directory", volDir, fi, err)
			}

			// docs/kubelet.md §1.7: after NodeUnpublish, mount, vol_data.json and
			// <specName> are removed; kubernetes.io~csi stays.
			e.unmountOK("app-1")
			for _, p := range []string{volDir + "/mount", volDir + "/vol_data.json", volDir} {
				if exists(p) {
					t.Errorf("%s still exists after NodeUnpublish", p)
				}
			}
			if !isDir(e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi") {
				t.Errorf("kubernetes.io~csi removed")
			}
			req := one[*csi.NodeUnpublishVolumeRequest](t, e.drv.Calls(), "NodeUnpublishVolume")
			if req.GetTargetPath() != volDir+"/mount" {
				t.Errorf("NodeUnpublish target_path = %q, want %q", req.GetTargetPath(), volDir+"/mount")
			}
		})
	}
}

// docs/kubelet.md §1.7: the kubelet removes the target after NodeUnpublish even
// when the driver leaves the (empty) directory behind.
func TestTearDownRemovesTargetLeftByDriver(t *testing.T) {
	drv := newFakeDriver()
	keepTarget(drv)
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
	e.mountOK("app-1")
	e.unmountOK("app-1")
	if exists(e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1") {
		t.Errorf("volume dir not removed")
	}
}

// A driver that leaves files in the target: os.Remove fails, TearDown
// reports it, and the mount stays known so that a later attempt retries.
func TestTearDownTargetNotEmpty(t *testing.T) {
	drv := newFakeDriver()
	keepTarget(drv)
	litterTarget(drv)
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
	e.mountOK("app-1")
	errs := e.unmount("app-1")
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want one", errs)
	}
	target := targetPV1(e.root)
	wantPrefix := `UnmountVolume.TearDown failed for volume "pv-1" : kubernetes.io/csi: Unmounter.TearDownAt failed to clean mount dir [` + target + `]: kubernetes.io/csi: failed to remove dir [` + target + `]: `
	if !strings.HasPrefix(errs[0].Error(), wantPrefix) {
		t.Errorf("error = %q\nwant prefix %q", errs[0], wantPrefix)
	}
	if !exists(targetPV1(e.root) + "/driver-file") {
		t.Errorf("driver's file removed")
	}
	drv.ClearFaults("NodePublishVolume")
	if err := os.Remove(target + "/driver-file"); err != nil {
		t.Fatal(err)
	}
	drv.ClearCalls()
	e.unmountOK("app-1")
	if got, want := seq(drv.Calls()), []string{"TearDown:NodeUnpublishVolume"}; !slices.Equal(got, want) {
		t.Errorf("retry calls = %q, want %q", got, want)
	}
}

// docs/kubelet.md §9: the publish secret of a PV is read in the ref's namespace,
// the one of an inline volume in the pod's namespace.
func TestPublishSecretNamespace(t *testing.T) {
	secrets := docs(
		"apiVersion: v1\nkind: Secret\nmetadata: {name: pub, namespace: default}\nstringData: {from: default}",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: pub, namespace: storage}\nstringData: {from: storage}",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: pub, namespace: team-a}\nstringData: {from: team-a}",
	)
	inlinePod := `apiVersion: v1
kind: Pod
metadata: {name: app-1, namespace: team-a, uid: pod-uid-1}
spec:
  containers: [{name: app, image: busybox, volumeMounts: [{name: scratch, mountPath: /scratch}]}]
  volumes:
  - {name: scratch, csi: {driver: hostpath.csi.k8s.io, nodePublishSecretRef: {name: pub}}}`
	tests := []struct {
		name      string
		manifests string
		want      string
	}{
		{"PV: the ref's namespace", docs(noAttachDriver, secrets,
			pvDoc("pv-1", "vol-1", "data-1", "csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, nodePublishSecretRef: {name: pub, namespace: storage}}"),
			pvc1, pod1), "storage"},
		{"inline: the pod's namespace", docs(csiDriverDoc("volumeLifecycleModes: [Ephemeral]"), secrets, inlinePod), "team-a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver())
			e.mountOK("app-1")
			got := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume").GetSecrets()
			if len(got) != 1 || got["from"] != tc.want {
				t.Errorf("secrets = %v, want {from: %s}", got, tc.want)
			}
		})
	}
}

// docs/kubelet.md §9, §12: a missing publish secret is transient: no NodePublish,
// the parent dir made before the secret GET stays, no vol_data.json, and no
// NodeUnpublish on teardown.
func TestMissingPublishSecret(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver,
		pvDoc("pv-1", "vol-1", "data-1", "csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, nodePublishSecretRef: {name: pub, namespace: storage}}"),
		pvc1, pod1), newFakeDriver(capStage))
	ve := volErr(t, e.mount("app-1"))
	const want = `fetching NodePublishSecretRef storage/pub failed: kubernetes.io/csi: failed to find the secret pub in the namespace storage with error: secrets "pub" not found`
	if ve.Err.Error() != want {
		t.Errorf("error = %q\nwant %q", ve.Err, want)
	}
	if ve.Kind != csiplugin.Transient || ve.Operation != "MountVolume.SetUp" {
		t.Errorf("kind, operation = %v, %q; want transient, MountVolume.SetUp", ve.Kind, ve.Operation)
	}
	wantCalls := []string{
		"MountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
		"MountDevice:NodeGetCapabilities(VOLUME_MOUNT_GROUP)",
		"MountDevice:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)",
		"MountDevice:NodeStageVolume",
		"SetUp:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
	}
	if got := seq(e.drv.Calls()); !slices.Equal(got, wantCalls) {
		t.Errorf("calls:\n got %q\nwant %q", got, wantCalls)
	}
	volDir := e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1"
	if !isDir(volDir) {
		t.Errorf("%s removed; a transient failure cleans nothing", volDir)
	}
	if exists(volDir + "/vol_data.json") {
		t.Errorf("vol_data.json written before the secret was read")
	}
	e.drv.ClearCalls()
	e.unmountOK("app-1")
	wantTear := []string{"UnmountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)", "UnmountDevice:NodeUnstageVolume"}
	if got := seq(e.drv.Calls()); !slices.Equal(got, wantTear) {
		t.Errorf("teardown calls = %q, want %q", got, wantTear)
	}
}

// A republish that fails with a final error, the driver having left the
// target unmounted and empty: up to 1.35 the kubelet removes the target and
// its vol_data.json (csi_mounter.go SetUpAt), and without vol_data.json
// csiPlugin.NewUnmounter fails, so the volume is never unpublished; from
// 1.36 both stay and the teardown unpublishes.
func TestTeardownAfterFailedRemount(t *testing.T) {
	for _, tc := range []struct {
		minor     int
		wantErr   string
		unpublish int
	}{
		{35, "UnmountVolume.NewUnmounter failed", 0},
		{36, "", 1},
	} {
		t.Run(fmt.Sprintf("1.%d", tc.minor), func(t *testing.T) {
			drv := newFakeDriver(capStage)
			e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "requiresRepublish: true"), pv1, pvc1, pod1), drv, withVersion(tc.minor))
			e.mountOK("app-1")
			drv.Errors("NodePublishVolume", status.Error(codes.InvalidArgument, "no"))
			if errs := e.k.vm.Republish(context.Background(), e.pod("app-1"), 1); len(errs) == 0 {
				t.Fatalf("Republish: no error, want the driver's InvalidArgument")
			}
			drv.ClearCalls()
			errs := e.unmount("app-1")
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("UnmountPod: %v", errs)
			case tc.wantErr != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.wantErr)):
				t.Errorf("UnmountPod: %v, want %q", errs, tc.wantErr)
			}
			if n := len(only(drv.Calls(), "NodeUnpublishVolume")); n != tc.unpublish {
				t.Errorf("%d NodeUnpublishVolume calls, want %d", n, tc.unpublish)
			}
		})
	}
}
