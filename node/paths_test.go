package node

import (
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// The spec name comes from the claim's PV, not the pod's volume name, when
// the kubelet resolves a pod; inline volumes use the pod's volume name
// (docs/kubelet.md §1.2).
func TestTargetPathOfResolvedVolumes(t *testing.T) {
	e := newEnv(t, docs(
		csiDriverDoc("attachRequired: false", "volumeLifecycleModes: [Persistent, Ephemeral]"),
		pv1, pvc1,
		podDoc("app-1", "pod-uid-1", claimVol("data", "data-1"), inlineVol("scratch", "")),
	), newFakeDriver())
	res := e.mountOK("app-1")
	want := []string{
		e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1/mount",
		e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/scratch/mount",
	}
	var got []string
	for _, c := range only(e.drv.Calls(), "NodePublishVolume") {
		got = append(got, c.Request.(*csi.NodePublishVolumeRequest).GetTargetPath())
	}
	if !slices.Equal(got, want) {
		t.Errorf("NodePublish target paths = %q, want %q", got, want)
	}
	for i, v := range res.Volumes {
		if v.TargetPath != want[i] {
			t.Errorf("VolumeResult[%d].TargetPath = %q, want %q", i, v.TargetPath, want[i])
		}
	}
}
