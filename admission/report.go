package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/namespace"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/object"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
)

// Report is what admission did to one object.
type Report = remote.Report

// WebhookReport is one webhook in one round.
type WebhookReport = remote.WebhookReport

// hook is one webhook in the order the API server calls them: the
// configurations sorted by name (configuration manager's sort), then the
// webhooks of each in order.
type hook struct {
	config string
	h      *admissionregistrationv1.MutatingWebhook
}

func (a *Admitter) hooks() []hook {
	cs := append([]*admissionregistrationv1.MutatingWebhookConfiguration(nil), a.configs...)
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	var out []hook
	for _, c := range cs {
		for i := range c.Webhooks {
			out = append(out, hook{c.Name, &c.Webhooks[i]})
		}
	}
	return out
}

func (a *Admitter) report(ctx context.Context, before runtime.Object, attrs admission.Attributes) *Report {
	m, _ := metaOf(before)
	r := &Report{Kind: before.GetObjectKind().GroupVersionKind().Kind, Namespace: m.GetNamespace(), Name: m.GetName()}
	calls := a.rec.snapshot()
	hooks := a.hooks()
	byIndex := map[int]call{}
	last := -1
	for _, c := range calls {
		if c.Round == 0 {
			byIndex[c.Index] = c
			last = c.Index
		}
	}
	prev := before
	for i, hk := range hooks {
		if c, ok := byIndex[i]; ok {
			w, next := a.called(c, prev)
			prev = next
			r.Webhooks = append(r.Webhooks, w)
			continue
		}
		w := WebhookReport{Configuration: hk.config, Webhook: hk.h.Name}
		if len(calls) > 0 && i > last && calls[len(calls)-1].failed() {
			w.Skipped = "not reached: admission stopped at an earlier webhook"
		} else {
			w.Skipped = a.matcher.why(ctx, hk, attrs, a.ifaces)
		}
		r.Webhooks = append(r.Webhooks, w)
	}
	for _, c := range calls {
		if c.Round > 0 {
			w, next := a.called(c, prev)
			prev = next
			r.Webhooks = append(r.Webhooks, w)
		}
	}
	return r
}

// failed tells whether the call stopped admission or failed open.
func (c call) failed() bool {
	resp, err := c.response()
	return err != nil || !resp.Allowed
}

// response decodes the AdmissionReview answer of the call's last request.
func (c call) response() (*admissionv1.AdmissionResponse, error) {
	if len(c.Exchanges) == 0 {
		return nil, errors.New("not called")
	}
	e := c.Exchanges[len(c.Exchanges)-1]
	if e.Err != nil {
		return nil, e.Err
	}
	if e.Status/100 != 2 {
		return nil, fmt.Errorf("HTTP %d", e.Status)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(e.Response, &review); err != nil || review.Response == nil {
		return nil, fmt.Errorf("malformed AdmissionReview answer")
	}
	return review.Response, nil
}

// called reports a call, and replays its patch on prev to tell what it
// changed (the API server also defaults the result, which the replay does
// not; the object returned by AdmitCreate is the API server's).
func (a *Admitter) called(c call, prev runtime.Object) (WebhookReport, runtime.Object) {
	w := WebhookReport{
		Configuration: c.Configuration, Webhook: c.Webhook, Round: c.Round, Called: true,
		FailedOpen: c.FailedOpen, Mutated: c.Mutated, Patch: c.Patch,
		Warnings: c.Warnings, AuditAnnotations: c.AuditAnnotations,
	}
	for _, e := range c.Exchanges {
		w.Latency += e.Latency
		w.URL = e.URL
	}
	resp, err := c.response()
	switch {
	case err != nil:
		w.Error = err.Error()
	case !resp.Allowed:
		if resp.Result != nil {
			w.Error = fmt.Sprintf("denied (%d): %s", resp.Result.Code, resp.Result.Message)
		} else {
			w.Error = "denied"
		}
	default:
		w.Allowed = true
		if len(c.Patch) == 0 && len(resp.Patch) > 0 {
			// The patch was refused: show what the webhook sent.
			w.Patch = json.RawMessage(resp.Patch)
			if !json.Valid(resp.Patch) {
				w.Patch, _ = json.Marshal(string(resp.Patch))
			}
			return w, prev
		}
	}
	if len(c.Patch) == 0 || c.Patch == nil || string(c.Patch) == "null" {
		w.Patch = nil
		return w, prev
	}
	next, err := applyPatch(prev, c.Patch)
	if err != nil {
		return w, prev
	}
	w.Changes = describeChanges(prev, next)
	return w, next
}

func applyPatch(obj runtime.Object, patch []byte) (runtime.Object, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out, err := p.Apply(js)
	if err != nil {
		return nil, err
	}
	next := obj.DeepCopyObject()
	zero(next)
	if err := json.Unmarshal(out, next); err != nil {
		return nil, err
	}
	return next, nil
}

// skipMatcher tells why a webhook was not called, with the plugin's own
// predicates, in the order ShouldCallHook applies them.
type skipMatcher struct {
	ns       *namespace.Matcher
	obj      *object.Matcher
	compiler cel.ConditionCompiler
}

func newSkipMatcher(client kubernetes.Interface, f informers.SharedInformerFactory) *skipMatcher {
	return &skipMatcher{
		ns:       &namespace.Matcher{NamespaceLister: f.Core().V1().Namespaces().Lister(), Client: client},
		obj:      &object.Matcher{},
		compiler: cel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())),
	}
}

func (s *skipMatcher) why(ctx context.Context, hk hook, attrs admission.Attributes, o admission.ObjectInterfaces) string {
	acc := webhook.NewMutatingWebhookAccessor(hk.config+"/"+hk.h.Name, hk.config, hk.h)
	var reasons []string
	if ok, err := s.ns.MatchNamespaceSelector(acc, attrs); !ok {
		ns := attrs.GetNamespace()
		if attrs.GetResource().Resource == "namespaces" {
			ns = attrs.GetName() // a namespace is matched by its own labels
		}
		reasons = append(reasons, fmt.Sprintf("namespaceSelector does not match namespace %q%s", ns, errSuffix(err)))
	}
	if ok, err := s.obj.MatchObjectSelector(acc, attrs); !ok {
		reasons = append(reasons, "objectSelector does not match the object's labels"+errSuffix(err))
	}
	matched := false
	for _, r := range hk.h.Rules {
		if (&rules.Matcher{Rule: r, Attr: attrs}).Matches() {
			matched = true
			break
		}
	}
	if !matched {
		gvr := attrs.GetResource()
		reasons = append(reasons, fmt.Sprintf("no rule matches %s %s (group %q, version %s)", attrs.GetOperation(), gvr.Resource, gvr.Group, gvr.Version))
	}
	if len(reasons) > 0 {
		return strings.Join(reasons, "; ")
	}
	if len(hk.h.MatchConditions) > 0 {
		va, err := admission.NewVersionedAttributes(attrs, attrs.GetKind(), o)
		if err == nil {
			res := acc.GetCompiledMatcher(s.compiler).Match(ctx, va, nil, nil)
			if !res.Matches && res.Error == nil {
				return fmt.Sprintf("matchCondition %q is false", res.FailedConditionName)
			}
		}
	}
	return "matched but not called"
}

func errSuffix(err *apierrors.StatusError) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

// ErrorKind sorts admission failures.
type ErrorKind = remote.ErrorKind

// The kinds of admission failures.
const (
	Denied      = remote.Denied
	CallFailed  = remote.CallFailed
	PatchFailed = remote.PatchFailed
	Failed      = remote.Failed
)

// Error is the API server refusing the object in admission.
type Error = remote.Error

// classify turns the plugin's error into an *Error naming the webhook.
func (a *Admitter) classify(err error, r *Report) error {
	e := &Error{Kind: Failed, Message: err.Error(), Code: 500}
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		e.Code = se.Status().Code
	}
	var last *WebhookReport
	for i := range r.Webhooks {
		if r.Webhooks[i].Called {
			last = &r.Webhooks[i]
		}
	}
	if last == nil {
		return e
	}
	e.Webhook, e.Configuration = last.Webhook, last.Configuration
	if last.Error == "" {
		last.Error = e.Message
	}
	calls := a.rec.snapshot()
	c := calls[len(calls)-1]
	resp, rerr := c.response()
	switch {
	case strings.Contains(err.Error(), "failed calling webhook"):
		e.Kind = CallFailed
	case rerr == nil && !resp.Allowed:
		e.Kind = Denied
	case rerr == nil && len(resp.Patch) > 0:
		e.Kind = PatchFailed
	}
	return e
}
