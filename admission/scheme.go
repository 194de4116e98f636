package admission

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
)

func metaOf(obj runtime.Object) (metav1.Object, error) { return meta.Accessor(obj) }

// newScheme is the plugin's view of the types. The API server converts
// between its internal and versioned types; here both are the versioned
// type, so a conversion is a copy. def is the API server's defaulting,
// which it runs after each patch.
func newScheme(def func(runtime.Object)) *runtime.Scheme {
	s := runtime.NewScheme()
	_ = corev1.AddToScheme(s)
	_ = storagev1.AddToScheme(s)
	for _, k := range remote.Kinds {
		_ = s.AddConversionFunc(k.Object, k.Object, func(a, b any, _ conversion.Scope) error {
			reflect.ValueOf(b).Elem().Set(reflect.ValueOf(a.(runtime.Object).DeepCopyObject()).Elem())
			return nil
		})
		if def != nil {
			s.AddTypeDefaultingFunc(k.Object, func(o any) { def(o.(runtime.Object)) })
		}
	}
	return s
}
