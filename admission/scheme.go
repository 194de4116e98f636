package admission

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kinds are the objects the tool reads, with the resource the API server
// serves each as (a small RESTMapper).
var kinds = []struct {
	obj        runtime.Object
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
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

// resourceFor maps an object to its kind and resource.
func resourceFor(obj runtime.Object) (schema.GroupVersionKind, schema.GroupVersionResource, bool, error) {
	t := reflect.TypeOf(obj)
	for _, k := range kinds {
		if reflect.TypeOf(k.obj) == t {
			return k.gvk, k.gvk.GroupVersion().WithResource(k.resource), k.namespaced, nil
		}
	}
	return schema.GroupVersionKind{}, schema.GroupVersionResource{}, false, fmt.Errorf("admission: unsupported object %T", obj)
}

// KindOf names an object's kind ("" if it is not one admission handles).
func KindOf(obj runtime.Object) string {
	gvk, _, _, err := resourceFor(obj)
	if err != nil {
		return ""
	}
	return gvk.Kind
}

func metaOf(obj runtime.Object) (metav1.Object, error) { return meta.Accessor(obj) }

// newScheme is the plugin's view of the types. The API server converts
// between its internal and versioned types; here both are the versioned
// type, so a conversion is a copy. def is the API server's defaulting,
// which it runs after each patch.
func newScheme(def func(runtime.Object)) *runtime.Scheme {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = storagev1.AddToScheme(s)
	for _, k := range kinds {
		_ = s.AddConversionFunc(k.obj, k.obj, func(a, b any, _ conversion.Scope) error {
			reflect.ValueOf(b).Elem().Set(reflect.ValueOf(a.(runtime.Object).DeepCopyObject()).Elem())
			return nil
		})
		if def != nil {
			s.AddTypeDefaultingFunc(k.obj, func(o any) { def(o.(runtime.Object)) })
		}
	}
	return s
}
