package cluster

import (
	"context"
	"errors"
	"net/http"
	"sort"
)

// Verdict is the API server's judgement of one object: created with
// dryRun=All (validation, defaulting and admission, nothing stored).
type Verdict struct {
	Accepted bool
	// Causes are the refusal's fields and messages, "field: message" as
	// field.Error prints them, sorted; Message is the whole refusal.
	Causes   []string
	Message  string
	Warnings []string
}

// DryRun asks the API server to create the object without storing it.
// An error is the environment's (no answer); a refusal is a Verdict.
func (cp *ControlPlane) DryRun(ctx context.Context, d Document) (Verdict, error) {
	m := &mapper{c: cp.admin}
	res, err := m.resource(ctx, d.Obj.APIVersion(), d.Obj.Kind())
	if err != nil {
		return Verdict{}, err
	}
	send := Object{}
	for k, v := range d.Obj {
		send[k] = v
	}
	send["metadata"] = copyMap(d.Obj.meta())
	if res.namespaced && send.Namespace() == "" {
		send.setNamespace("default")
	}
	err = cp.admin.do(ctx, http.MethodPost, res.collection(send.Namespace())+"?dryRun=All", send, nil)
	v := Verdict{Accepted: err == nil, Warnings: cp.Warnings.Take()}
	var se *StatusError
	if errors.As(err, &se) {
		v.Message = se.Error()
		if se.Status.Details != nil {
			for _, c := range se.Status.Details.Causes {
				v.Causes = append(v.Causes, c.Field+": "+c.Message)
			}
			sort.Strings(v.Causes)
		}
		return v, nil
	}
	return v, err
}
