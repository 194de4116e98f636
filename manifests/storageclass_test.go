package manifests

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// A StorageClass is read with the API server's defaults (reclaimPolicy
// Delete, volumeBindingMode Immediate) and validated as it validates one;
// a claim gets a UID.
func TestStorageClass(t *testing.T) {
	l := &Loader{Stdin: strings.NewReader(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast, namespace: ignored}
provisioner: ref.csi.example.com
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {storageClassName: fast}
`)}
	c, err := l.Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := c.StorageClass("fast")
	if !ok || sc.Namespace != "" || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("class %+v", sc)
	}
	if pvc, _ := c.PersistentVolumeClaim("default", "data"); pvc.UID != StableUID("PersistentVolumeClaim", "default", "data") {
		t.Errorf("claim UID %q", pvc.UID)
	}

	bad := []struct{ doc, want string }{
		{"metadata: {name: a}\n", "provisioner: Required value"},
		{"metadata: {name: a}\nprovisioner: a/b/c\n", `provisioner: Invalid value: "a/b/c"`},
		{"metadata: {name: a}\nprovisioner: x.io\nreclaimPolicy: Recycle\n", `reclaimPolicy: Unsupported value: "Recycle"`},
		{"metadata: {name: a}\nprovisioner: x.io\nvolumeBindingMode: Later\n", `volumeBindingMode: Unsupported value: "Later"`},
		{"metadata: {name: a}\nprovisioner: x.io\nallowedTopologies: [{matchLabelExpressions: []}]\n", "allowedTopologies[0]: Required value"},
		{"metadata: {name: a}\nprovisioner: x.io\nallowedTopologies: [{matchLabelExpressions: [{key: zone, values: []}]}]\n", "allowedTopologies[0].matchLabelExpressions[0].values: Required value"},
		{"metadata: {name: A_B}\nprovisioner: x.io\n", `metadata.name: Invalid value: "A_B"`},
	}
	for _, b := range bad {
		l := &Loader{Stdin: strings.NewReader("apiVersion: storage.k8s.io/v1\nkind: StorageClass\n" + b.doc)}
		_, err := l.Load([]string{"-"})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: error %v, want %q", b.doc, err, b.want)
		}
	}
}
