package manifests

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Every kind the loader reads has its apiVersion, and back.
func TestTypeOfNewOf(t *testing.T) {
	for _, kind := range Kinds() {
		obj := NewOf(wantAPIVersion[kind], kind)
		if obj == nil {
			t.Fatalf("NewOf(%s): nil", kind)
		}
		if v, k := TypeOf(obj); v != wantAPIVersion[kind] || k != kind {
			t.Errorf("TypeOf(NewOf(%s)) = %s %s", kind, v, k)
		}
	}
	if v, k := TypeOf(&storagev1.CSIDriver{}); v != "storage.k8s.io/v1" || k != "CSIDriver" {
		t.Errorf("CSIDriver: %s %s", v, k)
	}
	for _, obj := range []any{nil, corev1.Pod{}, &rbacv1.Role{}, &storagev1.CSINode{}} {
		if v, k := TypeOf(obj); v != "" || k != "" {
			t.Errorf("TypeOf(%T) = %q %q, want nothing", obj, v, k)
		}
	}
	if NewOf("v1beta1", "Pod") != nil || NewOf("v1", "Role") != nil {
		t.Error("NewOf made an object of another version or kind")
	}
}
