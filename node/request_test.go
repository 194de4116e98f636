package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// docs/kubelet.md §8: both columns of the access-mode table.
func TestAccessModeTables(t *testing.T) {
	tests := []struct {
		k8s         corev1.PersistentVolumeAccessMode
		withoutSNMW csi.VolumeCapability_AccessMode_Mode
		withSNMW    csi.VolumeCapability_AccessMode_Mode
	}{
		{"ReadWriteOnce", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{"ReadOnlyMany", csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{"ReadWriteMany", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{"ReadWriteOncePod", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{"SomethingElse", csi.VolumeCapability_AccessMode_UNKNOWN, csi.VolumeCapability_AccessMode_UNKNOWN},
	}
	for _, tc := range tests {
		t.Run(string(tc.k8s), func(t *testing.T) {
			if got := csiplugin.AsCSIAccessMode(tc.k8s); got != tc.withoutSNMW {
				t.Errorf("without SINGLE_NODE_MULTI_WRITER: %v, want %v", got, tc.withoutSNMW)
			}
			if got := csiplugin.AsSingleNodeMultiWriterCapableCSIAccessMode(tc.k8s); got != tc.withSNMW {
				t.Errorf("with SINGLE_NODE_MULTI_WRITER: %v, want %v", got, tc.withSNMW)
			}
		})
	}
}

// The same table through a whole mount: the first PV access mode only, RWO
// when the PV has none; the same mode in NodeStage and NodePublish
// (docs/kubelet.md §8, §21.5).
func TestAccessModeSent(t *testing.T) {
	tests := []struct {
		modes string // the PV's accessModes line
		snmw  bool
		want  csi.VolumeCapability_AccessMode_Mode
	}{
		{"accessModes: [ReadWriteOnce]", false, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{"accessModes: [ReadWriteOnce]", true, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{"accessModes: [ReadOnlyMany]", false, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{"accessModes: [ReadOnlyMany]", true, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{"accessModes: [ReadWriteMany]", false, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{"accessModes: [ReadWriteMany]", true, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{"accessModes: [ReadWriteOncePod]", false, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{"accessModes: [ReadWriteOncePod]", true, csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{"accessModes: [ReadOnlyMany, ReadWriteOnce]", false, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{"accessModes: [ReadWriteMany, ReadOnlyMany]", true, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
		{"accessModes: []", false, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{"accessModes: []", true, csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s snmw=%t", tc.modes, tc.snmw), func(t *testing.T) {
			caps := []csi.NodeServiceCapability_RPC_Type{capStage}
			if tc.snmw {
				caps = append(caps, capSNMW)
			}
			e := newEnv(t, docs(noAttachDriver, pvDoc("pv-1", "vol-1", "data-1", tc.modes), pvc1, pod1), newFakeDriver(caps...))
			e.mountOK("app-1")
			calls := e.drv.Calls()
			stageMode := one[*csi.NodeStageVolumeRequest](t, calls, "NodeStageVolume").GetVolumeCapability().GetAccessMode().GetMode()
			publishMode := one[*csi.NodePublishVolumeRequest](t, calls, "NodePublishVolume").GetVolumeCapability().GetAccessMode().GetMode()
			if stageMode != tc.want || publishMode != tc.want {
				t.Errorf("NodeStage %v, NodePublish %v; want %v", stageMode, publishMode, tc.want)
			}
		})
	}
}

// docs/kubelet.md §8, §21.6: readonly follows the pod's claim source only;
// pv.spec.csi.readOnly is not read.
func TestReadOnlyFromClaimSource(t *testing.T) {
	tests := []struct {
		claimRO, pvRO bool
		want          bool
	}{
		{false, false, false},
		{false, true, false},
		{true, false, true},
		{true, true, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("claim=%t pv=%t", tc.claimRO, tc.pvRO), func(t *testing.T) {
			pv := pvDoc("pv-1", "vol-1", "data-1", fmt.Sprintf("csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, readOnly: %t}", tc.pvRO))
			pod := podDoc("app-1", "pod-uid-1", fmt.Sprintf("{name: data, persistentVolumeClaim: {claimName: data-1, readOnly: %t}}", tc.claimRO))
			e := newEnv(t, docs(noAttachDriver, pv, pvc1, pod), newFakeDriver(capStage))
			e.mountOK("app-1")
			if got := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume").GetReadonly(); got != tc.want {
				t.Errorf("readonly = %t, want %t", got, tc.want)
			}
		})
	}
}

// docs/kubelet.md §8: mount_flags are the PV's spec.mountOptions, in NodeStage and
// NodePublish; volume_capability is always Mount, {} without fsType; inline
// volumes get no mount flags.
func TestMountFlagsAndAccessType(t *testing.T) {
	t.Run("PV mountOptions", func(t *testing.T) {
		e := newEnv(t, docs(noAttachDriver, pvDoc("pv-1", "vol-1", "data-1", "mountOptions: [ro, noatime, 'context=\"a:b\"']"), pvc1, pod1), newFakeDriver(capStage))
		e.mountOK("app-1")
		want := []string{"ro", "noatime", `context="a:b"`}
		calls := e.drv.Calls()
		stage := one[*csi.NodeStageVolumeRequest](t, calls, "NodeStageVolume").GetVolumeCapability().GetMount()
		pub := one[*csi.NodePublishVolumeRequest](t, calls, "NodePublishVolume").GetVolumeCapability().GetMount()
		if !slices.Equal(stage.GetMountFlags(), want) || !slices.Equal(pub.GetMountFlags(), want) {
			t.Errorf("mount flags: NodeStage %q, NodePublish %q; want %q", stage.GetMountFlags(), pub.GetMountFlags(), want)
		}
	})
	t.Run("no fsType, no mountOptions: Mount{}", func(t *testing.T) {
		e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
		e.mountOK("app-1")
		for _, c := range e.drv.Calls() {
			var vc *csi.VolumeCapability
			switch r := c.Request.(type) {
			case *csi.NodeStageVolumeRequest:
				vc = r.GetVolumeCapability()
			case *csi.NodePublishVolumeRequest:
				vc = r.GetVolumeCapability()
			default:
				continue
			}
			m := vc.GetMount()
			if m == nil || vc.GetBlock() != nil {
				t.Errorf("%s: access type %T, want Mount", c.Method, vc.GetAccessType())
				continue
			}
			if m.GetFsType() != "" || len(m.GetMountFlags()) != 0 || m.GetVolumeMountGroup() != "" {
				t.Errorf("%s: mount = %v, want {}", c.Method, m)
			}
		}
	})
	t.Run("inline: none", func(t *testing.T) {
		e := newEnv(t, docs(csiDriverDoc("volumeLifecycleModes: [Ephemeral]"), podDoc("app-1", "pod-uid-1", inlineVol("scratch", "fsType: ext4"))), newFakeDriver())
		e.mountOK("app-1")
		m := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume").GetVolumeCapability().GetMount()
		if m.GetMountFlags() != nil || m.GetFsType() != "ext4" {
			t.Errorf("mount = %v, want {fs_type: ext4}", m)
		}
	})
}

// docs/kubelet.md §7.1, §21.10: with VOLUME_MOUNT_GROUP the pod's fsGroup
// goes to NodeStage and NodePublish as a decimal string; without it nothing.
func TestVolumeMountGroup(t *testing.T) {
	podWithFSGroup := `apiVersion: v1
kind: Pod
metadata: {name: app-1, namespace: default, uid: pod-uid-1}
spec:
  securityContext: {fsGroup: 2000}
  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: data-1}}`
	tests := []struct {
		name string
		caps []csi.NodeServiceCapability_RPC_Type
		pod  string
		want string
	}{
		{"capability and fsGroup", []csi.NodeServiceCapability_RPC_Type{capStage, capVMG}, podWithFSGroup, "2000"},
		{"no capability", []csi.NodeServiceCapability_RPC_Type{capStage}, podWithFSGroup, ""},
		{"capability, no fsGroup", []csi.NodeServiceCapability_RPC_Type{capStage, capVMG}, pod1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "fsGroupPolicy: None"), pv1, pvc1, tc.pod), newFakeDriver(tc.caps...))
			e.mountOK("app-1")
			calls := e.drv.Calls()
			s := one[*csi.NodeStageVolumeRequest](t, calls, "NodeStageVolume").GetVolumeCapability().GetMount().GetVolumeMountGroup()
			p := one[*csi.NodePublishVolumeRequest](t, calls, "NodePublishVolume").GetVolumeCapability().GetMount().GetVolumeMountGroup()
			if s != tc.want || p != tc.want {
				t.Errorf("volume_mount_group: NodeStage %q, NodePublish %q; want %q", s, p, tc.want)
			}
		})
	}
}

// Requests with no volume id or path never reach the driver.
func TestRequiredFieldsCheckedBeforeCall(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver), newFakeDriver())
	ctx := t.Context()
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"stage: volume id", func() error {
			return e.k.vm.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{StagingTargetPath: "/x"}, corev1.ReadWriteOnce, "", nil, nil)
		}, "missing volume id"},
		{"stage: staging path", func() error {
			return e.k.vm.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v"}, corev1.ReadWriteOnce, "", nil, nil)
		}, "missing staging target path"},
		{"publish: volume id", func() error {
			return e.k.vm.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{TargetPath: "/x"}, corev1.ReadWriteOnce, "", nil, nil)
		}, "missing volume id"},
		{"publish: target path", func() error {
			return e.k.vm.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v"}, corev1.ReadWriteOnce, "", nil, nil)
		}, "missing target path"},
		{"unstage: volume id", func() error { return e.k.vm.NodeUnstageVolume(ctx, "", "/x") }, "missing volume id"},
		{"unstage: staging path", func() error { return e.k.vm.NodeUnstageVolume(ctx, "v", "") }, "missing staging target path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
			if calls := e.drv.Calls(); len(calls) != 0 {
				t.Errorf("driver called: %q", seq(calls))
			}
		})
	}
}
