package admission

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	admissioninformers "k8s.io/client-go/informers/admissionregistration"
	admissioninformersv1 "k8s.io/client-go/informers/admissionregistration/v1"
	coreinformers "k8s.io/client-go/informers/core"
	coreinformersv1 "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// The plugin reads its configurations and the namespaces through an
// informer factory and, for a namespace its lister lacks, a clientset. The
// input is fixed, so both are served from two indexers that never change:
// the only methods the plugin calls are implemented, the rest of each
// interface is left nil (a call would panic, and none is made). A real
// factory over a fake clientset would link every API group's typed client
// and informer into the binary.

// store holds the input's configurations and namespaces.
type store struct {
	namespaces cache.Indexer
	configs    cache.Indexer
}

func newStore() *store {
	return &store{
		namespaces: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		configs:    cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
}

// factory is an informers.SharedInformerFactory with only Core and
// Admissionregistration.
type factory struct {
	informers.SharedInformerFactory
	s *store
}

func (f factory) Core() coreinformers.Interface { return coreGroup{s: f.s} }
func (f factory) Admissionregistration() admissioninformers.Interface {
	return admissionGroup{s: f.s}
}

type coreGroup struct {
	coreinformers.Interface
	s *store
}

func (g coreGroup) V1() coreinformersv1.Interface { return coreV1{s: g.s} }

type coreV1 struct {
	coreinformersv1.Interface
	s *store
}

func (v coreV1) Namespaces() coreinformersv1.TypedNamespaceInformer { return namespaceInformer{s: v.s} }

type namespaceInformer struct {
	coreinformersv1.TypedNamespaceInformer
	s *store
}

func (i namespaceInformer) Informer() cache.SharedIndexInformer { return synced{} }
func (i namespaceInformer) Lister() corelisters.NamespaceLister {
	return corelisters.NewNamespaceLister(i.s.namespaces)
}

type admissionGroup struct {
	admissioninformers.Interface
	s *store
}

func (g admissionGroup) V1() admissioninformersv1.Interface { return admissionV1{s: g.s} }

type admissionV1 struct {
	admissioninformersv1.Interface
	s *store
}

func (v admissionV1) MutatingWebhookConfigurations() admissioninformersv1.TypedMutatingWebhookConfigurationInformer {
	return configInformer{s: v.s}
}

type configInformer struct {
	admissioninformersv1.TypedMutatingWebhookConfigurationInformer
	s *store
}

func (i configInformer) Informer() cache.SharedIndexInformer { return synced{} }
func (i configInformer) Lister() admissionlisters.MutatingWebhookConfigurationLister {
	return admissionlisters.NewMutatingWebhookConfigurationLister(i.s.configs)
}

// synced is an informer that has always synced: its store is full from
// the start.
type synced struct{ cache.SharedIndexInformer }

func (synced) HasSynced() bool { return true }
func (synced) AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return registration{}, nil
}

type registration struct {
	cache.ResourceEventHandlerRegistration
}

func (registration) HasSynced() bool { return true }

// client is the clientset the namespace matcher falls back on; it reads
// the same namespaces.
type client struct {
	kubernetes.Interface
	s *store
}

func (c client) CoreV1() typedcorev1.CoreV1Interface { return coreClient{s: c.s} }

type coreClient struct {
	typedcorev1.CoreV1Interface
	s *store
}

func (c coreClient) Namespaces() typedcorev1.NamespaceInterface { return namespaceClient{s: c.s} }

type namespaceClient struct {
	typedcorev1.NamespaceInterface
	s *store
}

func (c namespaceClient) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Namespace, error) {
	ns, err := corelisters.NewNamespaceLister(c.s.namespaces).Get(name)
	if err != nil {
		return nil, err
	}
	return ns.DeepCopy(), nil
}

// addNamespace adds a namespace unless it is there.
func (s *store) addNamespace(ns *corev1.Namespace) error {
	if _, ok, _ := s.namespaces.GetByKey(ns.Name); ok {
		return nil
	}
	return s.namespaces.Add(withNameLabel(ns))
}

func (s *store) addConfig(c *admissionregistrationv1.MutatingWebhookConfiguration) error {
	if _, ok, _ := s.configs.GetByKey(c.Name); ok {
		return apierrors.NewAlreadyExists(admissionregistrationv1.Resource("mutatingwebhookconfigurations"), c.Name)
	}
	return s.configs.Add(c.DeepCopy())
}
