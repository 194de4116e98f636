package livecluster

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Secrets a class's parameters name for a claim: the provisioner's
// templates filled in, those it cannot fill left unread, sorted.
func TestClassSecrets(t *testing.T) {
	sc := &storagev1.StorageClass{Parameters: map[string]string{
		"csi.storage.k8s.io/node-stage-secret-name":             "stage-${pvc.name}",
		"csi.storage.k8s.io/node-stage-secret-namespace":        "${pvc.namespace}",
		"csi.storage.k8s.io/node-publish-secret-name":           "publish",
		"csi.storage.k8s.io/node-publish-secret-namespace":      "storage",
		"csi.storage.k8s.io/controller-expand-secret-name":      "${pvc.annotations['team']}",
		"csi.storage.k8s.io/controller-expand-secret-namespace": "x",
		"csi.storage.k8s.io/provisioner-secret-name":            "no-namespace",
		"other": "y",
	}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "app"}}
	got := classSecrets(sc, pvc)
	want := [][2]string{{"app", "stage-data"}, {"storage", "publish"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("classSecrets = %v, want %v", got, want)
	}
}
