package remote

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kinds are the objects the tool reads, with the resource the API server
// serves each as (a small RESTMapper).
var Kinds = []struct {
	Object     runtime.Object
	GVK        schema.GroupVersionKind
	Resource   string
	Namespaced bool
}{
	{&corev1.Pod{}, corev1.SchemeGroupVersion.WithKind("Pod"), "pods", true},
	{&corev1.PersistentVolume{}, corev1.SchemeGroupVersion.WithKind("PersistentVolume"), "persistentvolumes", false},
	{&corev1.PersistentVolumeClaim{}, corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), "persistentvolumeclaims", true},
	{&corev1.Secret{}, corev1.SchemeGroupVersion.WithKind("Secret"), "secrets", true},
	{&corev1.ServiceAccount{}, corev1.SchemeGroupVersion.WithKind("ServiceAccount"), "serviceaccounts", true},
	{&corev1.Node{}, corev1.SchemeGroupVersion.WithKind("Node"), "nodes", false},
	{&corev1.Namespace{}, corev1.SchemeGroupVersion.WithKind("Namespace"), "namespaces", false},
	{&storagev1.CSIDriver{}, storagev1.SchemeGroupVersion.WithKind("CSIDriver"), "csidrivers", false},
	{&storagev1.VolumeAttachment{}, storagev1.SchemeGroupVersion.WithKind("VolumeAttachment"), "volumeattachments", false},
}

// ResourceFor maps an object to its kind and resource.
func ResourceFor(obj runtime.Object) (schema.GroupVersionKind, schema.GroupVersionResource, bool, error) {
	t := reflect.TypeOf(obj)
	for _, k := range Kinds {
		if reflect.TypeOf(k.Object) == t {
			return k.GVK, k.GVK.GroupVersion().WithResource(k.Resource), k.Namespaced, nil
		}
	}
	return schema.GroupVersionKind{}, schema.GroupVersionResource{}, false, fmt.Errorf("admission: unsupported object %T", obj)
}

// KindOf names an object's kind ("" if it is not one admission handles).
func KindOf(obj runtime.Object) string {
	gvk, _, _, err := ResourceFor(obj)
	if err != nil {
		return ""
	}
	return gvk.Kind
}

// newObject is an empty object of a kind admission handles.
func newObject(kind string) (runtime.Object, error) {
	for _, k := range Kinds {
		if k.GVK.Kind == kind {
			return k.Object.DeepCopyObject(), nil
		}
	}
	return nil, fmt.Errorf("admission: unsupported kind %q", kind)
}
