package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"

// NotEstablishedError is a CRD the API server did not serve in time, or
// whose names it refused: bad input, exit 2.
type NotEstablishedError struct {
	Name, Why string
}

func (e *NotEstablishedError) Error() string {
	return fmt.Sprintf("CustomResourceDefinition %s did not become Established: %s", e.Name, e.Why)
}

// waitEstablished waits until every CRD just made is Established. A CRD
// whose names are not accepted never will be: that is reported at once.
func (a *applier) waitEstablished(ctx context.Context) error {
	for _, crd := range a.crds {
		if err := a.waitOne(ctx, crd); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) waitOne(ctx context.Context, name string) error {
	deadline := time.Now().Add(a.opts.EstablishWait)
	last := "no conditions yet"
	for {
		var crd Object
		if err := a.c.do(ctx, http.MethodGet, crdPath+url.PathEscape(name), nil, &crd); err != nil {
			return fmt.Errorf("CustomResourceDefinition %s: %w", name, err)
		}
		conds, _ := crd.nested("status", "conditions").([]any)
		for _, c := range conds {
			m, _ := c.(map[string]any)
			typ, status, msg := fmt.Sprint(m["type"]), fmt.Sprint(m["status"]), fmt.Sprint(m["message"])
			switch {
			case typ == "Established" && status == "True":
				return nil
			case typ == "NamesAccepted" && status == "False":
				return &NotEstablishedError{Name: name, Why: "NamesAccepted is False: " + msg}
			case status != "True":
				last = fmt.Sprintf("%s is %s: %s", typ, status, msg)
			}
		}
		if time.Now().After(deadline) {
			return &NotEstablishedError{Name: name, Why: fmt.Sprintf("not in %s (%s)", a.opts.EstablishWait, last)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// builtinNamespaces exist in every cluster.
var builtinNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}

// controllerObjects makes what the input needs and kube-controller-manager
// would make: the namespaces the objects name and the input lacks (as
// `kubectl create namespace` before the apply), and in each namespace used
// the default ServiceAccount (ServiceAccount admission refuses a pod
// without it) and the kube-root-ca.crt ConfigMap (the kube-api-access
// volume of the pods reads it).
func (a *applier) controllerObjects(ctx context.Context, docs []Document) ([]string, error) {
	used, declared, sas := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, d := range docs {
		u := d.Obj
		switch {
		case u.Kind() == "Namespace":
			declared[u.Name()] = true
		case u.Kind() == "ServiceAccount":
			sas[nsOrDefault(u)+"/"+u.Name()] = true
		}
		if u.Kind() != "Namespace" && (u.Namespace() != "" || isNamespacedCore(u)) {
			used[nsOrDefault(u)] = true
		}
	}
	var made []string
	ca, err := os.ReadFile(a.cp.CAFile)
	if err != nil {
		return nil, err
	}
	for _, ns := range sortedKeys(used) {
		if !declared[ns] && !builtinNamespaces[ns] {
			if err := a.ensure(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				return made, err
			}
			made = append(made, "Namespace "+ns)
		}
		if !sas[ns+"/default"] {
			if err := a.ensure(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}); err != nil {
				return made, err
			}
			made = append(made, "ServiceAccount "+ns+"/default")
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns}, Data: map[string]string{"ca.crt": string(ca)}}
		if err := a.ensure(ctx, cm); err != nil {
			return made, err
		}
	}
	if len(made) == 0 {
		return nil, nil
	}
	return []string{"made what kube-controller-manager and kubectl would: " + strings.Join(made, ", ")}, nil
}

// ensure creates a namespace, service account or config map unless it
// exists. These objects are the tool's: a refusal is an environment
// problem, not the input's.
func (a *applier) ensure(ctx context.Context, obj any) error {
	var path string
	switch o := obj.(type) {
	case *corev1.Namespace:
		path = "/api/v1/namespaces"
	case *corev1.ServiceAccount:
		path = "/api/v1/namespaces/" + url.PathEscape(o.Namespace) + "/serviceaccounts"
	case *corev1.ConfigMap:
		path = "/api/v1/namespaces/" + url.PathEscape(o.Namespace) + "/configmaps"
	}
	err := a.c.do(ctx, http.MethodPost, path, obj, nil)
	if isAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the API server: %w", err)
	}
	return nil
}

// isNamespacedCore: the kinds the simulator reads that live in a namespace
// even when the input names none (the default one).
func isNamespacedCore(u Object) bool {
	switch u.Kind() {
	case "Pod", "PersistentVolumeClaim", "Secret", "ServiceAccount", "ConfigMap":
		return u.APIVersion() == "v1"
	}
	return false
}

func nsOrDefault(u Object) string {
	if ns := u.Namespace(); ns != "" {
		return ns
	}
	return corev1.NamespaceDefault
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
