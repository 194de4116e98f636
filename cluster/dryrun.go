package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
func (cp *ControlPlane) DryRun(ctx context.Context, objs []RawObject) ([]Verdict, error) {
	c, err := newClient(cp.URL, cp.CAFile, cp.Admin, nil)
	if err != nil {
		return nil, fmt.Errorf("client of the API server: %w", err)
	}
	j := &judge{c: c, mapper: &mapper{c: c}, madeNS: map[string]bool{}, inputSAs: map[string]bool{}}
	us := make([]Object, len(objs))
	verdicts := make([]Verdict, len(objs))
	for i, o := range objs {
		u, err := ObjectFromJSON(o.JSON)
		if err != nil {
			verdicts[i] = Verdict{Reason: "BadRequest", Message: err.Error()}
			continue
		}
		us[i] = u
		if isKind("ServiceAccount")(u) {
			j.inputSAs[namespaceOf(u)+"/"+u.Name()] = true
		}
	}
	j.done = make([]bool, len(us))
	for _, phase := range []func(Object) bool{isCRD, isKind("Namespace"), isKind("ServiceAccount"), nil} {
		if err := j.phase(ctx, us, verdicts, phase); err != nil {
			return nil, err
		}
	}
	return verdicts, nil
}

func isCRD(u Object) bool {
	return u.Kind() == "CustomResourceDefinition" && u.Group() == "apiextensions.k8s.io"
}

func isKind(kind string) func(Object) bool {
	return func(u Object) bool { return u.Kind() == kind && u.APIVersion() == "v1" }
}

func namespaceOf(u Object) string {
	if ns := u.Namespace(); ns != "" {
		return ns
	}
	return metav1.NamespaceDefault
}

// judge submits objects and remembers the namespaces it made.
type judge struct {
	c      *client
	mapper *mapper
	madeNS map[string]bool
	// inputSAs are the input's ServiceAccounts "<ns>/<name>": a
	// namespace's "default" is not made when the input holds it.
	inputSAs map[string]bool
	done     []bool
	// crds: CustomResourceDefinitions were made, so a kind can take a
	// moment to reach discovery.
	crds bool
}

// phase judges the objects of one phase (nil: all those left, dry-run).
// CRDs are waited for and the kinds they add are then discovered.
func (j *judge) phase(ctx context.Context, us []Object, verdicts []Verdict, in func(Object) bool) error {
	made := false
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
			made = true
			if err := j.waitEstablished(ctx, u.Name()); err != nil {
				verdicts[i] = Verdict{Real: true, Reason: "NotEstablished", Message: err.Error(), Object: v.Object}
			}
		}
	}
	if made {
		j.crds = true
		j.mapper.reset()
	}
	return nil
}

// submit creates one object, dry-run unless create; a refusal is a
// verdict, a failure to reach the API server an error.
func (j *judge) submit(ctx context.Context, u Object, create bool) (Verdict, error) {
	lookup := j.mapper.lookup
	if j.crds {
		lookup = j.mapper.resource
	}
	res, err := lookup(ctx, u.APIVersion(), u.Kind())
	if err != nil {
		if isStatus(err) || strings.HasPrefix(err.Error(), "no kind ") {
			return Verdict{Reason: "NotFound", Message: err.Error()}, nil
		}
		return Verdict{}, fmt.Errorf("discovery of %s %s: %w", u.APIVersion(), u.Kind(), err)
	}
	object := u.Kind() + " " + u.Name()
	ns := ""
	if res.namespaced {
		ns = namespaceOf(u)
		object = u.Kind() + " " + ns + "/" + u.Name()
		if err := j.ensureNamespace(ctx, ns); err != nil {
			return Verdict{}, err
		}
	}
	query := url.Values{"fieldValidation": {"Strict"}, "fieldManager": {"csi-kubelet-sim-validate"}}
	if !create {
		query.Set("dryRun", "All")
	}
	w := &Warnings{}
	j.c.warnings = w // one object's warnings: a fresh collector per request
	err = j.c.do(ctx, http.MethodPost, res.collection(ns)+"?"+query.Encode(), u, nil)
	v := Verdict{Real: create, Warnings: w.Take(), Object: object}
	if err == nil || (create && isAlreadyExists(err)) {
		// Already there: made earlier as a namespace's own, or one of
		// the API server's (namespace default).
		v.Accepted = true
		return v, nil
	}
	var se *StatusError
	if !errors.As(err, &se) {
		return Verdict{}, fmt.Errorf("create %s: %w", object, err)
	}
	v.Reason, v.Message = string(se.Status.Reason), se.Status.Message
	if v.Reason == "" {
		v.Reason = http.StatusText(se.Code)
	}
	if se.Status.Details != nil && se.Status.Reason == metav1.StatusReasonInvalid {
		for _, c := range se.Status.Details.Causes {
			v.Causes = append(v.Causes, causeText(c))
		}
	}
	return v, nil
}

func isStatus(err error) bool {
	var se *StatusError
	return errors.As(err, &se)
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
	nsObj := Object{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}
	if err := j.c.do(ctx, http.MethodPost, "/api/v1/namespaces", nsObj, nil); err != nil && !isAlreadyExists(err) {
		if statusCode(err) == http.StatusUnprocessableEntity {
			return nil // the object's own submission reports the bad namespace
		}
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	if j.inputSAs[ns+"/default"] {
		return nil
	}
	sa := Object{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}
	if err := j.c.do(ctx, http.MethodPost, "/api/v1/namespaces/"+url.PathEscape(ns)+"/serviceaccounts", sa, nil); err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("service account %s/default: %w", ns, err)
	}
	return nil
}

// waitEstablished waits until the CRD's Established condition is True.
func (j *judge) waitEstablished(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var crd Object
		err := j.c.do(ctx, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+url.PathEscape(name), nil, &crd)
		if err == nil && established(crd) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CustomResourceDefinition %s did not become Established in 30s", name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func established(crd Object) bool {
	conds, _ := crd.nested("status", "conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
