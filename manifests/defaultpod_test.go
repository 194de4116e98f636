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

// Provision: the default volume is a claim of a StorageClass of the
// driver and no PV (the input's class when it has one, else one made
// here), with no VolumeAttachment: the attacher makes it once the volume
// exists.
func TestAddDefaultPodProvisioned(t *testing.T) {
	attachmentName := func(handle, driver, node string) string { return "va-" + handle }
	for _, tc := range []struct {
		name, manifests, wantClass string
	}{
		{"no class", "", DefaultClassName},
		{"the input's class of the driver", "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: other}\nprovisioner: x.example.com\n---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: d\n", "fast"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			if tc.manifests != "" {
				c = loadString(t, &Loader{}, tc.manifests)
			}
			if _, err := c.AddDefaultPod(DefaultPod{Driver: "d", NodeName: "node-1", AttachmentName: attachmentName, Provision: true}); err != nil {
				t.Fatal(err)
			}
			pvc, ok := c.PersistentVolumeClaim("default", DefaultClaimName)
			if !ok || pvc.Spec.VolumeName != "" || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != tc.wantClass || pvc.UID == "" {
				t.Fatalf("claim %+v", pvc)
			}
			if q := pvc.Spec.Resources.Requests.Storage(); q.String() != DefaultClaimSize {
				t.Errorf("claim requests %s", q)
			}
			sc, ok := c.StorageClass(tc.wantClass)
			if !ok || sc.Provisioner != "d" && tc.wantClass == DefaultClassName || sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != "Delete" {
				t.Errorf("class %+v", sc)
			}
			if _, ok := c.PersistentVolume(DefaultPVName); ok {
				t.Error("a provisioned default volume has no PV before the provisioner")
			}
			if _, ok := c.VolumeAttachment("va-" + DefaultVolumeHandle); ok {
				t.Error("no VolumeAttachment before the volume exists")
			}
		})
	}
}
