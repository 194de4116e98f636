package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Document is one input object on its way to the API, with where it was
// read (file:line) for messages.
type Document struct {
	Source string
	Obj    Object
}

// RefusedError is an object the API server refused (its validation, an
// admission plugin, a webhook): bad input, exit 2.
type RefusedError struct {
	Source, Kind, Name string
	Err                error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: the API server refused %s %s: %s", e.Source, e.Kind, e.Name, e.Err)
}
func (e *RefusedError) Unwrap() error { return e.Err }

// ServerFailed tells whether the API server did not judge the object at
// all: no answer (the server or its etcd died, the connection broke) or
// an answer saying it could not serve (502, 503, 504: etcd unreachable,
// a timeout). That is the environment (exit 3), not the input.
func (e *RefusedError) ServerFailed() bool {
	var se *StatusError
	if !errors.As(e.Err, &se) {
		return true
	}
	switch se.Code {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// ServerError tells whether the API server answered with an error of its
// own (5xx) or not at all: then whether it is still running decides
// whose the failure is (a webhook that failed is a 500 too).
func (e *RefusedError) ServerError() bool {
	var se *StatusError
	return e.ServerFailed() || errors.As(e.Err, &se) && se.Code >= 500
}

// Applied is what Apply made: the objects as the API server returned
// them (server-set UIDs, defaults, the webhooks' changes), in the order
// created, and what it made that the input lacked.
type Applied struct {
	Objects []Object
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
	if opts.EstablishWait <= 0 {
		opts.EstablishWait = 30 * time.Second
	}
	a := &applier{cp: cp, c: cp.admin, opts: opts, mapper: &mapper{c: cp.admin}}
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
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: %s: %s", d.Source, d.Obj, w))
		}
	}
	return out, nil
}

// rank orders the kinds.
func rank(o Object) int {
	g, k := o.Group(), o.Kind()
	switch {
	case g == "apiextensions.k8s.io":
		return 0
	case g == "" && k == "Namespace":
		return 1
	case g == "" && k == "ServiceAccount", g == "rbac.authorization.k8s.io":
		return 2
	case g == "admissionregistration.k8s.io":
		return 3
	case g == "" && k == "Pod":
		return 5
	}
	return 4
}

type applier struct {
	cp     *ControlPlane
	c      *client
	opts   ApplyOptions
	mapper *mapper
	crds   []string
	nsDone bool
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
		a.mapper.reset()
	}
	if r >= 2 && !a.nsDone {
		a.nsDone = true
		notes, err := a.controllerObjects(ctx, docs)
		out.Notes = append(out.Notes, notes...)
		return err
	}
	return nil
}

func (a *applier) create(ctx context.Context, d Document) (Object, error) {
	o := d.Obj
	refused := func(err error) error {
		return &RefusedError{Source: d.Source, Kind: o.Kind(), Name: o.Key(), Err: err}
	}
	res, err := a.mapper.resource(ctx, o.APIVersion(), o.Kind())
	if err != nil {
		return nil, refused(err)
	}
	send := Object{}
	for k, v := range o {
		send[k] = v
	}
	send["metadata"] = copyMap(o.meta())
	if o.Group() == "" && o.Kind() == "Pod" {
		if spec, ok := send["spec"].(map[string]any); ok && spec["nodeName"] == nil && a.opts.NodeName != "" {
			spec = copyMap(spec)
			spec["nodeName"] = a.opts.NodeName
			send["spec"] = spec
		}
	}
	if res.namespaced && send.Namespace() == "" {
		send.setNamespace("default")
	}
	var created Object
	if err := a.c.do(ctx, http.MethodPost, res.collection(send.Namespace())+"?fieldManager=csi-kubelet-sim", send, &created); err != nil {
		return nil, refused(err)
	}
	// The status of a claim and of a volume (Bound) is the PV
	// controller's, which does not run here: the input's is written.
	if st, ok := o["status"]; ok && o.Group() == "" && (o.Kind() == "PersistentVolume" || o.Kind() == "PersistentVolumeClaim") {
		created["status"] = st
		path := res.collection(created.Namespace()) + "/" + url.PathEscape(created.Name()) + "/status"
		if err := a.c.do(ctx, http.MethodPut, path, created, &created); err != nil {
			return nil, &RefusedError{Source: d.Source, Kind: o.Kind(), Name: o.Key() + " (status)", Err: err}
		}
	}
	if o.Group() == "apiextensions.k8s.io" && o.Kind() == "CustomResourceDefinition" {
		a.crds = append(a.crds, created.Name())
	}
	return created, nil
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// mapper finds the resource of a kind from the API server's discovery, as
// kubectl does.
type mapper struct {
	c     *client
	lists map[string]*metav1.APIResourceList
}

type resource struct {
	groupVersion, name string
	namespaced         bool
}

// collection is the resource's path in a namespace ("" for a
// cluster-scoped resource).
func (r resource) collection(ns string) string {
	p := "/apis/" + r.groupVersion
	if !strings.Contains(r.groupVersion, "/") {
		p = "/api/" + r.groupVersion
	}
	if r.namespaced {
		p += "/namespaces/" + url.PathEscape(ns)
	}
	return p + "/" + r.name
}

func (m *mapper) reset() { m.lists = nil }

// resource maps a kind; a kind of a CRD just made can take a moment to
// reach discovery.
func (m *mapper) resource(ctx context.Context, apiVersion, kind string) (resource, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := m.lookup(ctx, apiVersion, kind)
		if err == nil || time.Now().After(deadline) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		delete(m.lists, apiVersion)
	}
}

func (m *mapper) lookup(ctx context.Context, apiVersion, kind string) (resource, error) {
	if m.lists == nil {
		m.lists = map[string]*metav1.APIResourceList{}
	}
	list, ok := m.lists[apiVersion]
	if !ok {
		path := "/apis/" + apiVersion
		if !strings.Contains(apiVersion, "/") {
			path = "/api/" + apiVersion
		}
		list = &metav1.APIResourceList{}
		if err := m.c.do(ctx, http.MethodGet, path, nil, list); err != nil {
			if isNotFound(err) {
				return resource{}, fmt.Errorf("no kind %s is served at %s (no such API group or version; a CustomResourceDefinition missing?)", kind, apiVersion)
			}
			return resource{}, err
		}
		m.lists[apiVersion] = list
	}
	for _, r := range list.APIResources {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			return resource{groupVersion: apiVersion, name: r.Name, namespaced: r.Namespaced}, nil
		}
	}
	return resource{}, fmt.Errorf("no kind %s is served at %s", kind, apiVersion)
}
