package node

import (
	"maps"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// docs/kubelet.md §10: attach is required unless a CSIDriver says attachRequired: false.
func TestAttachRequired(t *testing.T) {
	tests := []struct {
		name      string
		manifests string
		want      bool
	}{
		{"no CSIDriver object", "", true},
		{"attachRequired defaulted", csiDriverDoc(), true},
		{"attachRequired: true", csiDriverDoc("attachRequired: true"), true},
		{"attachRequired: false", csiDriverDoc("attachRequired: false"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newUnregisteredEnv(t, tc.manifests, newFakeDriver())
			if got := e.k.vm.AttachRequired(testDriver); got != tc.want {
				t.Errorf("attachRequired = %t, want %t", got, tc.want)
			}
		})
	}
}

// docs/kubelet.md §10, §21.11: publish_context is the VolumeAttachment's
// attachmentMetadata, in NodeStage and NodePublish; a missing CSIDriver
// means attach is required.
func TestPublishContext(t *testing.T) {
	va := vaDoc(attachmentVol1, "pv-1", true, "attachmentMetadata: {devicePath: /dev/xvdb, lun: '3'}")
	want := map[string]string{"devicePath": "/dev/xvdb", "lun": "3"}
	tests := []struct {
		name      string
		manifests string
		want      map[string]string
	}{
		{"no CSIDriver object", docs(va, pv1, pvc1, pod1), want},
		{"attachRequired: true", docs(csiDriverDoc("attachRequired: true"), va, pv1, pvc1, pod1), want},
		{"attachRequired: false: none, even with a VolumeAttachment", docs(noAttachDriver, va, pv1, pvc1, pod1), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver(capStage))
			e.mountOK("app-1")
			calls := e.drv.Calls()
			stage := one[*csi.NodeStageVolumeRequest](t, calls, "NodeStageVolume").GetPublishContext()
			pub := one[*csi.NodePublishVolumeRequest](t, calls, "NodePublishVolume").GetPublishContext()
			if !maps.Equal(stage, tc.want) || !maps.Equal(pub, tc.want) {
				t.Errorf("publish_context: NodeStage %v, NodePublish %v; want %v", stage, pub, tc.want)
			}
		})
	}
}

// Inline volumes are never attached: no VolumeAttachment needed, empty
// publish_context (docs/kubelet.md §2).
func TestInlineNeverAttached(t *testing.T) {
	e := newEnv(t, docs(csiDriverDoc("attachRequired: true", "volumeLifecycleModes: [Ephemeral]"),
		podDoc("app-1", "pod-uid-1", inlineVol("scratch", ""))), newFakeDriver())
	e.mountOK("app-1")
	if pc := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume").GetPublishContext(); len(pc) != 0 {
		t.Errorf("publish_context = %v, want empty", pc)
	}
}

// docs/kubelet.md §10: WaitForAttach failures, their texts, transient, before
// any call to the driver.
func TestWaitForAttachErrors(t *testing.T) {
	node := func(attached ...string) string {
		s := "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus:\n  volumesAttached:"
		if len(attached) == 0 {
			return s + " []"
		}
		for _, a := range attached {
			s += "\n  - {name: '" + a + "', devicePath: ''}"
		}
		return s
	}
	deletingVA := `apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata:
  name: ` + attachmentVol1 + `
  deletionTimestamp: "2026-01-02T15:04:05Z"
spec:
  attacher: hostpath.csi.k8s.io
  nodeName: node-1
  source: {persistentVolumeName: pv-1}
status: {attached: true}`
	tests := []struct {
		name      string
		manifests string
		want      string
	}{
		{
			name:      "VolumeAttachment missing",
			manifests: docs(pv1, pvc1, pod1),
			want:      `volume vol-1 has GET error for volume attachment csi-a5a2e67339ab5660a390dc86be397e784322823ff01f40cf2c01a72c3cab1374: volumeattachments.storage.k8s.io "csi-a5a2e67339ab5660a390dc86be397e784322823ff01f40cf2c01a72c3cab1374" not found`,
		},
		{
			name:      "not attached",
			manifests: docs(vaDoc(attachmentVol1, "pv-1", false), pv1, pvc1, pod1),
			want:      "volume vol-1 is not attached for volume attachment csi-a5a2e67339ab5660a390dc86be397e784322823ff01f40cf2c01a72c3cab1374",
		},
		{
			name:      "attachError",
			manifests: docs(vaDoc(attachmentVol1, "pv-1", false, "attachError: {message: 'rpc error: code = NotFound desc = disk gone'}"), pv1, pvc1, pod1),
			want:      "rpc error: code = NotFound desc = disk gone",
		},
		{
			name:      "being deleted",
			manifests: docs(deletingVA, pv1, pvc1, pod1),
			want:      "volume attachment is being deleted",
		},
		{
			name:      "Node object without the volume in volumesAttached",
			manifests: docs(node("kubernetes.io/csi/hostpath.csi.k8s.io^vol-2"), vaDoc(attachmentVol1, "pv-1", true), pv1, pvc1, pod1),
			want:      "volume kubernetes.io/csi/hostpath.csi.k8s.io^vol-1 is not yet in node's status",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver(capStage))
			ve := volErr(t, e.mount("app-1"))
			if ve.Err.Error() != tc.want {
				t.Errorf("error = %q\nwant %q", ve.Err, tc.want)
			}
			if ve.Kind != csiplugin.Transient || ve.Operation != "MountVolume.WaitForAttach" {
				t.Errorf("kind, operation = %v, %q; want transient, MountVolume.WaitForAttach", ve.Kind, ve.Operation)
			}
			if calls := e.drv.Calls(); len(calls) != 0 {
				t.Errorf("driver called: %q", seq(calls))
			}
		})
	}
}

// The volume listed in node.status.volumesAttached and an attached
// VolumeAttachment: the mount goes on.
func TestWaitForAttachWithNode(t *testing.T) {
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus:\n  volumesAttached:\n  - {name: 'kubernetes.io/csi/hostpath.csi.k8s.io^vol-1', devicePath: ''}"
	e := newEnv(t, docs(node, vaDoc(attachmentVol1, "pv-1", true), pv1, pvc1, pod1), newFakeDriver(capStage))
	e.mountOK("app-1")
}
