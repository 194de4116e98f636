package controlplane

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// A scenario's objects for the API: the volume and claim its pod mounts,
// then the pod, without the fields the API server sets (a second Run of
// the scenario has the server's UID and resourceVersion on them).
func TestScenarioDocuments(t *testing.T) {
	c := manifests.New()
	src := manifests.Source{File: "(test)"}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", UID: "u1", ResourceVersion: "7"}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "default", Finalizers: []string{"kubernetes.io/pvc-protection"}},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u3", ResourceVersion: "9"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}}}}}
	for _, o := range []any{pv, pvc, pod} {
		if err := c.Add(o, src); err != nil {
			t.Fatal(err)
		}
	}
	docs, volumes, err := scenarioDocuments(c, []node.PodPlan{{Pod: pod}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.Obj.String())
		if d.Obj.UID() != "" {
			t.Errorf("%s keeps uid %q", d.Obj, d.Obj.UID())
		}
		meta := d.Obj["metadata"].(map[string]any)
		for _, k := range []string{"resourceVersion", "finalizers"} {
			if _, ok := meta[k]; ok {
				t.Errorf("%s keeps %s", d.Obj, k)
			}
		}
	}
	want := []string{"PersistentVolume pv", "PersistentVolumeClaim default/claim", "Pod default/p"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("documents %v, want %v", got, want)
	}
	if len(volumes) != 2 {
		t.Errorf("volumes %d, want the PV and the claim", len(volumes))
	}
	if pod.UID != "u3" {
		t.Errorf("the pod itself was changed: UID %q", pod.UID)
	}
}
