package manifests

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The API server's own words for what it requires of the objects `run`
// takes as given (found by validate's differential check against it).
func TestAPIServerErrors(t *testing.T) {
	pvName := "pv1"
	storage := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	cases := []struct {
		name string
		obj  any
		want []string // substrings, one per error, in order
	}{
		{"pv complete", &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{AccessModes: rwo, Capacity: storage}}, nil},
		{"pv empty", &corev1.PersistentVolume{}, []string{
			"spec.accessModes: Required value",
			"spec.capacity: Required value",
			`spec.capacity: Unsupported value: null: supported values: "storage"`,
		}},
		{"claim complete", &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo,
			Resources: corev1.VolumeResourceRequirements{Requests: storage}}}, nil},
		{"claim empty", &corev1.PersistentVolumeClaim{}, []string{
			"spec.accessModes: Required value: at least 1 access mode is required",
			"spec.resources[storage]: Required value",
		}},
		{"pod without containers", &corev1.Pod{}, []string{"spec.containers: Required value"}},
		{"pod mounts a volume it lacks", &corev1.Pod{Spec: corev1.PodSpec{
			Volumes:        []corev1.Volume{{Name: "data"}},
			InitContainers: []corev1.Container{{Name: "i", VolumeMounts: []corev1.VolumeMount{{Name: "data"}, {Name: "gone"}}}},
			Containers:     []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "other"}}}},
		}}, []string{
			`spec.initContainers[0].volumeMounts[1].name: Not found: "gone"`,
			`spec.containers[0].volumeMounts[0].name: Not found: "other"`,
		}},
		{"secret keys", &corev1.Secret{
			Data:       map[string][]byte{"ok.key": nil, "bad/key": nil},
			StringData: map[string]string{"ok.key": "", "also bad": ""},
		}, []string{`data[also bad]: Invalid value: "also bad"`, `data[bad/key]: Invalid value: "bad/key"`}},
		{"attachment without source", &storagev1.VolumeAttachment{}, []string{
			"spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
		}},
		{"attachment with both sources", &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Source: storagev1.VolumeAttachmentSource{
			PersistentVolumeName: &pvName, InlineVolumeSpec: &corev1.PersistentVolumeSpec{}}}}, []string{
			"spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
		}},
		{"attachment of a PV", &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Source: storagev1.VolumeAttachmentSource{
			PersistentVolumeName: &pvName}}}, nil},
		{"a kind it does not judge", &corev1.Namespace{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := APIServerErrors(c.obj)
			if len(got) != len(c.want) {
				t.Fatalf("got %d errors %q, want %d like %q", len(got), got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("error %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// A key given in both data and stringData is judged once.
func TestAPIServerErrorsSecretKeyOnce(t *testing.T) {
	got := APIServerErrors(&corev1.Secret{
		Data:       map[string][]byte{"bad key": nil},
		StringData: map[string]string{"bad key": ""},
	})
	if n := len(slices.DeleteFunc(got, func(e string) bool { return !strings.Contains(e, "bad key") })); n != 1 {
		t.Fatalf("errors naming the key: %d (%q), want 1", n, got)
	}
}
