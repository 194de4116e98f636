package manifests

import (
	"slices"
	"testing"
)

func TestAddDefaultPod(t *testing.T) {
	attachmentName := func(handle, driver, node string) string { return "va-" + handle + "-" + driver + "-" + node }
	tests := []struct {
		name        string
		manifests   string
		wantVolumes []string
		wantVA      bool
	}{
		{"no CSIDriver: a claim, attach required", "", []string{"data"}, true},
		{"both modes, no attach", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d}\nspec: {attachRequired: false, volumeLifecycleModes: [Ephemeral, Persistent]}",
			[]string{"inline", "data"}, false},
		{"ephemeral only", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d}\nspec: {volumeLifecycleModes: [Ephemeral]}",
			[]string{"inline"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			if tc.manifests != "" {
				c = loadString(t, &Loader{}, tc.manifests)
			}
			pod, err := c.AddDefaultPod(DefaultPod{Driver: "d", NodeName: "node-1", AttachmentName: attachmentName})
			if err != nil {
				t.Fatal(err)
			}
			if pod.Name != "csi-kubelet-sim" || pod.Namespace != "default" || pod.Spec.ServiceAccountName != "default" || pod.UID != StableUID("Pod", "default", "csi-kubelet-sim") {
				t.Errorf("pod = %s/%s sa %s uid %s", pod.Namespace, pod.Name, pod.Spec.ServiceAccountName, pod.UID)
			}
			var names, mounts []string
			for _, v := range pod.Spec.Volumes {
				names = append(names, v.Name)
			}
			for _, m := range pod.Spec.Containers[0].VolumeMounts {
				mounts = append(mounts, m.Name+":"+m.MountPath)
			}
			if !slices.Equal(names, tc.wantVolumes) {
				t.Errorf("volumes = %q, want %q", names, tc.wantVolumes)
			}
			if len(mounts) != len(names) || (len(mounts) > 0 && mounts[0] != names[0]+":/data0") {
				t.Errorf("volume mounts = %q", mounts)
			}
			if slices.Contains(names, "data") {
				pvc, found := c.PersistentVolumeClaim("default", "sim-claim")
				pv, pvFound := c.PersistentVolume("sim-pv")
				if !found || !pvFound || pvc.Spec.VolumeName != "sim-pv" || pv.Spec.CSI.Driver != "d" || pv.Spec.CSI.VolumeHandle != "sim-volume-1" {
					t.Errorf("claim/PV: %v %v", pvc, pv)
				}
			}
			va, found := c.VolumeAttachment("va-sim-volume-1-d-node-1")
			if found != tc.wantVA || (found && !va.Status.Attached) {
				t.Errorf("VolumeAttachment found=%t (%+v), want %t and attached", found, va, tc.wantVA)
			}
			if got := c.SourceOf("Pod", "default", "csi-kubelet-sim").String(); got != "(default pod): document 1" {
				t.Errorf("source = %q", got)
			}
		})
	}
}
