package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// The API server's verdict on objects as written, for `validate
// --apiserver`: every object is submitted with a server-side dry run
// (fieldValidation=Strict, as kubectl apply), so that the API server's own
// decoding, defaulting, validation and admission judge it and nothing is
// stored. What other objects need to be judged at all is created for real
// first, in the order a user applies it: CustomResourceDefinitions (waited
// for until Established, so that their custom resources can be judged),
// Namespaces, then ServiceAccounts (the ServiceAccount admission plugin
// refuses a pod whose ServiceAccount does not exist). A namespace the input
// uses but does not hold, and its ServiceAccount "default", are made as the
// namespace's creator and the controller manager would (they are not
// verdicts).

// Verdict is the API server's answer on one object.
type Verdict struct {
	Accepted bool
	// Real: the object was created (a CRD, Namespace or ServiceAccount
	// the other objects need), not dry-run.
	Real bool
	// Warnings are the API server's warnings (the Warning headers).
	Warnings []string
	// Causes are the field errors of an Invalid refusal, each
	// "<field>: <message>" as the tool words its own.
	Causes []string
	// Reason and Message are a refusal's status (Message whole).
	Reason  string
	Message string
	// Object names it as the simulator does: "Kind namespace/name", or
	// "Kind name" when cluster-scoped ("" when its kind is not served).
	Object string
}

// RawObject is one object as written (JSON).
type RawObject struct {
	JSON []byte
}

// DryRun judges objs in the order above and returns one verdict per
// object, in objs' order. An error is a failure to talk to the API server
// (not a refusal).
func DryRun(ctx context.Context, cfg *rest.Config, objs []RawObject) ([]Verdict, error) {
	w := &warnings{}
	c := rest.CopyConfig(cfg)
	c.WarningHandler = w
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	j := &judge{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), warn: w, madeNS: map[string]bool{}, inputSAs: map[string]bool{}}
	us := make([]*unstructured.Unstructured, len(objs))
	verdicts := make([]Verdict, len(objs))
	for i, o := range objs {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(o.JSON); err != nil {
			verdicts[i] = Verdict{Reason: "BadRequest", Message: err.Error()}
			continue
		}
		us[i] = u
		if isKind("ServiceAccount")(u) {
			j.inputSAs[namespaceOf(u)+"/"+u.GetName()] = true
		}
	}
	for _, phase := range []func(*unstructured.Unstructured) bool{isCRD, isKind("Namespace"), isKind("ServiceAccount"), nil} {
		if err := j.phase(ctx, us, verdicts, phase); err != nil {
			return nil, err
		}
	}
	return verdicts, nil
}

func isCRD(u *unstructured.Unstructured) bool {
	return u.GetKind() == "CustomResourceDefinition" && strings.HasPrefix(u.GetAPIVersion(), "apiextensions.k8s.io/")
}

func isKind(kind string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool { return u.GetKind() == kind && u.GetAPIVersion() == "v1" }
}

// judge submits objects and remembers the namespaces it made.
type judge struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	warn   *warnings
	madeNS map[string]bool
	// inputSAs are the input's ServiceAccounts "<ns>/<name>": a
	// namespace's "default" is not made when the input holds it.
	inputSAs map[string]bool
	done     []bool
}

// phase judges the objects of one phase (nil: all those left, dry-run).
// CRDs are waited for and the kinds they add are then discovered.
func (j *judge) phase(ctx context.Context, us []*unstructured.Unstructured, verdicts []Verdict, in func(*unstructured.Unstructured) bool) error {
	if j.done == nil {
		j.done = make([]bool, len(us))
	}
	crds := false
	for i, u := range us {
		if u == nil || j.done[i] || (in != nil && !in(u)) {
			continue
		}
		j.done[i] = true
		create := in != nil
		v, err := j.submit(ctx, u, create)
		if err != nil {
			return err
		}
		verdicts[i] = v
		if create && v.Accepted && isCRD(u) {
			crds = true
			if err := j.waitEstablished(ctx, u.GetName()); err != nil {
				verdicts[i] = Verdict{Real: true, Reason: "NotEstablished", Message: err.Error()}
			}
		}
	}
	if crds {
		j.mapper.Reset()
	}
	return nil
}

// submit creates one object, dry-run unless real; a refusal is a verdict,
// a failure to reach the API server an error.
func (j *judge) submit(ctx context.Context, u *unstructured.Unstructured, real bool) (Verdict, error) {
	gvk := u.GroupVersionKind()
	m, err := j.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return Verdict{Reason: "NotFound", Message: fmt.Sprintf("no kind %s is served at %s", gvk.Kind, u.GetAPIVersion())}, nil
		}
		return Verdict{}, fmt.Errorf("discovery of %s: %w", gvk, err)
	}
	ri := dynamic.ResourceInterface(j.dyn.Resource(m.Resource))
	object := gvk.Kind + " " + u.GetName()
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := namespaceOf(u)
		object = gvk.Kind + " " + ns + "/" + u.GetName()
		if err := j.ensureNamespace(ctx, ns); err != nil {
			return Verdict{}, err
		}
		ri = j.dyn.Resource(m.Resource).Namespace(ns)
	}
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict, FieldManager: "csi-kubelet-sim-validate"}
	if !real {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	j.warn.reset()
	_, err = ri.Create(ctx, u, opts)
	v := Verdict{Real: real, Warnings: j.warn.take(), Object: object}
	if err == nil {
		v.Accepted = true
		return v, nil
	}
	if real && apierrors.IsAlreadyExists(err) {
		// Made earlier as a namespace's own (default ServiceAccount):
		// what the input holds is then what stays.
		v.Accepted = true
		return v, nil
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return Verdict{}, fmt.Errorf("create %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	s := st.Status()
	v.Reason, v.Message = string(s.Reason), s.Message
	if s.Details != nil && s.Reason == metav1.StatusReasonInvalid {
		for _, c := range s.Details.Causes {
			v.Causes = append(v.Causes, causeText(c))
		}
	}
	return v, nil
}

func namespaceOf(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns
	}
	return metav1.NamespaceDefault
}

func causeText(c metav1.StatusCause) string {
	if c.Field == "" {
		return c.Message
	}
	return c.Field + ": " + c.Message
}

// ensureNamespace makes a namespace the input uses but does not hold, and
// its ServiceAccount "default" (the controller manager's, which this
// control plane does not run).
func (j *judge) ensureNamespace(ctx context.Context, ns string) error {
	if j.madeNS[ns] {
		return nil
	}
	j.madeNS[ns] = true
	nsRes := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := j.dyn.Resource(nsRes).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		if apierrors.IsInvalid(err) {
			return nil // the object's own submission reports the bad namespace
		}
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	if j.inputSAs[ns+"/default"] {
		return nil
	}
	saRes := schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}}
	if _, err := j.dyn.Resource(saRes).Namespace(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("service account %s/default: %w", ns, err)
	}
	return nil
}

// waitEstablished waits until the CRD's Established condition is True.
func (j *judge) waitEstablished(ctx context.Context, name string) error {
	res := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		u, err := j.dyn.Resource(res).Get(ctx, name, metav1.GetOptions{})
		if err == nil && established(u) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CustomResourceDefinition %s did not become Established in 30s", name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// warnings collects the Warning headers of one request at a time.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) reset() { w.mu.Lock(); w.list = nil; w.mu.Unlock() }

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}
