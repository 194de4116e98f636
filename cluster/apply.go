package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
)

// Document is one input object on its way to the API, with where it was
// read (file:line) for messages.
type Document struct {
	Source string
	Obj    *unstructured.Unstructured
}

// FromTyped makes a Document of an object of client-go's scheme.
func FromTyped(obj runtime.Object, source string) (Document, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return Document{}, fmt.Errorf("%s: kind of %T: %v", source, obj, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return Document{}, fmt.Errorf("%s: %w", source, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return Document{Source: source, Obj: u}, nil
}

// RefusedError is an object the API server refused (its validation, an
// admission plugin, a webhook): bad input, exit 2.
type RefusedError struct {
	Source, Kind, Name string
	Err                error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: the API server refused %s %s: %s", e.Source, e.Kind, e.Name, apiMessage(e.Err))
}
func (e *RefusedError) Unwrap() error { return e.Err }

func apiMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Message != "" {
		return st.Status().Message
	}
	return err.Error()
}

// Applied is what Apply made: the objects as the API server returned
// them (server-set UIDs, defaults, the webhooks' changes), in the input's
// order, and what it made that the input lacked.
type Applied struct {
	Objects []*unstructured.Unstructured
	Notes   []string
	// Warnings are the API server's warnings on the input's objects.
	Warnings []string
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	NodeName string // set on pods that name no node (the scheduler's part)
	// EstablishWait bounds the wait for each CRD (default 30 s).
	EstablishWait time.Duration
}

// Apply creates the documents through the API as an admin would with
// kubectl apply, in the order that lets each one be admitted: the CRDs
// (waited for until Established), the Namespaces, ServiceAccounts and
// RBAC, the webhook configurations, the rest, the Pods last. What
// kube-controller-manager would add (a namespace's default ServiceAccount
// and its kube-root-ca.crt ConfigMap) is made too, and named in Notes.
func (cp *ControlPlane) Apply(ctx context.Context, docs []Document, opts ApplyOptions) (*Applied, error) {
	a, err := newApplier(cp, opts)
	if err != nil {
		return nil, err
	}
	sorted := append([]Document(nil), docs...)
	sort.SliceStable(sorted, func(i, j int) bool { return rank(sorted[i].Obj) < rank(sorted[j].Obj) })
	out := &Applied{}
	for i, d := range sorted {
		if i == 0 || rank(d.Obj) != rank(sorted[i-1].Obj) {
			if err := a.beforeRank(ctx, rank(d.Obj), sorted, out); err != nil {
				return out, err
			}
		}
		created, err := a.create(ctx, d)
		if err != nil {
			return out, err
		}
		out.Objects = append(out.Objects, created)
		for _, w := range cp.Warnings.Take() {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: %s %s: %s", d.Source, d.Obj.GetKind(), objName(d.Obj), w))
		}
	}
	return out, nil
}

// rank orders the kinds.
func rank(u *unstructured.Unstructured) int {
	gvk := u.GroupVersionKind()
	switch {
	case gvk.Group == "apiextensions.k8s.io":
		return 0
	case gvk.Group == "" && gvk.Kind == "Namespace":
		return 1
	case gvk.Group == "" && gvk.Kind == "ServiceAccount", gvk.Group == "rbac.authorization.k8s.io":
		return 2
	case gvk.Group == "admissionregistration.k8s.io":
		return 3
	case gvk.Group == "" && gvk.Kind == "Pod":
		return 5
	}
	return 4
}

type applier struct {
	cp      *ControlPlane
	opts    ApplyOptions
	client  kubernetes.Interface
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	crds    []*unstructured.Unstructured
	nsDone  bool
}

func newApplier(cp *ControlPlane, opts ApplyOptions) (*applier, error) {
	if opts.EstablishWait <= 0 {
		opts.EstablishWait = 30 * time.Second
	}
	client, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cp.Admin)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cp.Admin)
	if err != nil {
		return nil, err
	}
	return &applier{cp: cp, opts: opts, client: client, dynamic: dyn,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// beforeRank runs when the objects of a new rank start: after the CRDs,
// wait for them; before the ServiceAccounts, the namespaces the input
// uses and lacks, and their default ServiceAccount and CA ConfigMap.
func (a *applier) beforeRank(ctx context.Context, r int, docs []Document, out *Applied) error {
	if len(a.crds) > 0 {
		if err := a.waitEstablished(ctx); err != nil {
			return err
		}
		a.crds = nil
		a.mapper.Reset()
	}
	if r >= 2 && !a.nsDone {
		a.nsDone = true
		notes, err := a.controllerObjects(ctx, docs)
		out.Notes = append(out.Notes, notes...)
		return err
	}
	return nil
}

func (a *applier) create(ctx context.Context, d Document) (*unstructured.Unstructured, error) {
	u := d.Obj.DeepCopy()
	gvk := u.GroupVersionKind()
	name := objName(u)
	mapping, err := a.mapping(ctx, gvk)
	if err != nil {
		return nil, &RefusedError{Source: d.Source, Kind: gvk.Kind, Name: name, Err: err}
	}
	if gvk.Group == "" && gvk.Kind == "Pod" {
		if n, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName"); n == "" && a.opts.NodeName != "" {
			_ = unstructured.SetNestedField(u.Object, a.opts.NodeName, "spec", "nodeName")
		}
	}
	var ri dynamic.ResourceInterface = a.dynamic.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if u.GetNamespace() == "" {
			u.SetNamespace(corev1.NamespaceDefault)
		}
		ri = a.dynamic.Resource(mapping.Resource).Namespace(u.GetNamespace())
	}
	status, hasStatus := u.Object["status"]
	created, err := ri.Create(ctx, u, metav1.CreateOptions{FieldManager: "csi-kubelet-sim"})
	if err != nil {
		return nil, &RefusedError{Source: d.Source, Kind: gvk.Kind, Name: name, Err: err}
	}
	// The status of a claim and of a volume (Bound) is the PV
	// controller's, which does not run here: the input's is written.
	if hasStatus && gvk.Group == "" && (gvk.Kind == "PersistentVolume" || gvk.Kind == "PersistentVolumeClaim") {
		created.Object["status"] = status
		if created, err = ri.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "csi-kubelet-sim"}); err != nil {
			return nil, &RefusedError{Source: d.Source, Kind: gvk.Kind, Name: name + " (status)", Err: err}
		}
	}
	if gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition" {
		a.crds = append(a.crds, created)
	}
	return created, nil
}

// mapping finds the resource of a kind; a kind of a CRD just made can take
// a moment to reach discovery.
func (a *applier) mapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil || !meta.IsNoMatchError(err) || time.Now().After(deadline) {
			return m, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		a.mapper.Reset()
	}
}

func objName(u *unstructured.Unstructured) string {
	if u.GetNamespace() != "" {
		return u.GetNamespace() + "/" + u.GetName()
	}
	return u.GetName()
}
