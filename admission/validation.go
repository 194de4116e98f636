package admission

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/util/webhook"
)

// ValidateConfiguration judges a MutatingWebhookConfiguration (defaults
// applied) as the API server does on create. It follows
// ValidateMutatingWebhookConfiguration in Kubernetes v1.37
// (pkg/apis/admissionregistration/validation/validation.go) step by step,
// on the v1 type rather than the internal one, with the options of a
// create: match conditions checked, no side effects, a recognized
// AdmissionReview version, unique webhook names, valid label values. The
// differential test in e2e/webhookdiff compares both on a table of
// configurations.
func ValidateConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	errs := genericvalidation.ValidateObjectMeta(&c.ObjectMeta, false, genericvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	names := sets.New[string]()
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		path := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(h, path)...)
		errs = append(errs, validateReviewVersions(h.AdmissionReviewVersions, path.Child("admissionReviewVersions"))...)
		if h.Name != "" {
			if names.Has(h.Name) {
				errs = append(errs, field.Duplicate(path.Child("name"), h.Name))
			} else {
				names.Insert(h.Name)
			}
		}
	}
	return errs
}

var (
	failurePolicies      = sets.New("Ignore", "Fail")
	matchPolicies        = sets.New("Exact", "Equivalent")
	noSideEffects        = sets.New("None", "NoneOnDryRun")
	operations           = sets.New("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
	reinvocationPolicies = sets.New("Never", "IfNeeded")
	scopes               = sets.New("Cluster", "Namespaced", "*")
	reviewVersions       = []string{"v1", "v1beta1"}
)

// validateWebhook follows validateMutatingWebhook.
func validateWebhook(h *admissionregistrationv1.MutatingWebhook, path *field.Path) field.ErrorList {
	errs := utilvalidation.IsFullyQualifiedName(path.Child("name"), h.Name)
	for i := range h.Rules {
		errs = append(errs, validateRuleWithOperations(&h.Rules[i], path.Child("rules").Index(i))...)
	}
	if h.FailurePolicy != nil && !failurePolicies.Has(string(*h.FailurePolicy)) {
		errs = append(errs, field.NotSupported(path.Child("failurePolicy"), *h.FailurePolicy, sets.List(failurePolicies)))
	}
	if h.MatchPolicy != nil && !matchPolicies.Has(string(*h.MatchPolicy)) {
		errs = append(errs, field.NotSupported(path.Child("matchPolicy"), *h.MatchPolicy, sets.List(matchPolicies)))
	}
	if h.SideEffects == nil {
		errs = append(errs, field.Required(path.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(sets.List(noSideEffects), ", "))))
	}
	if h.SideEffects != nil && !noSideEffects.Has(string(*h.SideEffects)) {
		errs = append(errs, field.NotSupported(path.Child("sideEffects"), *h.SideEffects, sets.List(noSideEffects)))
	}
	if t := h.TimeoutSeconds; t != nil && (*t > 30 || *t < 1) {
		errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	selOpts := metav1validation.LabelSelectorValidationOptions{}
	if h.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.NamespaceSelector, selOpts, path.Child("namespaceSelector"))...)
	}
	if h.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.ObjectSelector, selOpts, path.Child("objectSelector"))...)
	}
	if h.ReinvocationPolicy != nil && !reinvocationPolicies.Has(string(*h.ReinvocationPolicy)) {
		errs = append(errs, field.NotSupported(path.Child("reinvocationPolicy"), *h.ReinvocationPolicy, sets.List(reinvocationPolicies)))
	}
	cc := h.ClientConfig
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(path.Child("clientConfig"), "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, webhook.ValidateWebhookURL(path.Child("clientConfig").Child("url"), *cc.URL, true)...)
	default:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		errs = append(errs, webhook.ValidateWebhookService(path.Child("clientConfig").Child("service"), cc.Service.Name, cc.Service.Namespace, cc.Service.Path, port)...)
	}
	return append(errs, validateMatchConditions(h.MatchConditions, path.Child("matchConditions"))...)
}

// validateRuleWithOperations follows validateRuleWithOperations and
// validateRule (subresources allowed).
func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(path.Child("operations"), ""))
	}
	ops := make([]string, len(r.Operations))
	for i, o := range r.Operations {
		ops[i] = string(o)
	}
	if len(ops) > 1 && has(ops, "*") {
		errs = append(errs, field.Invalid(path.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, o := range r.Operations {
		if !operations.Has(string(o)) {
			errs = append(errs, field.NotSupported(path.Child("operations").Index(i), o, sets.List(operations)))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(path.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && has(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(path.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(path.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && has(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(path.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(path.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, path.Child("resources"))...)
	if r.Scope != nil && !scopes.Has(string(*r.Scope)) {
		errs = append(errs, field.NotSupported(path.Child("scope"), *r.Scope, sets.List(scopes)))
	}
	return errs
}

func has(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// validateResources follows validateResources: "x", "x/y", "x/*",
// "*/y", "*", "*/*" and the combinations the API server refuses.
func validateResources(resources []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(path, ""))
	}
	wildSub := sets.New[string]() // x/*
	wildRes := sets.New[string]() // */x
	double, single, plain := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(path.Index(i), ""))
			continue
		}
		if rs == "*/*" {
			double = true
		}
		if rs == "*" {
			single = true
		}
		res, sub, ok := strings.Cut(rs, "/")
		if !ok {
			plain = rs != "*"
			continue
		}
		if wildSub.Has(res) {
			errs = append(errs, field.Invalid(path.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if wildRes.Has(sub) {
			errs = append(errs, field.Invalid(path.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			wildSub.Insert(res)
		}
		if res == "*" {
			wildRes.Insert(sub)
		}
	}
	if len(resources) > 1 && double {
		errs = append(errs, field.Invalid(path, resources, "if '*/*' is present, must not specify other resources"))
	}
	if single && plain {
		errs = append(errs, field.Invalid(path, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// validateReviewVersions follows validateAdmissionReviewVersions with a
// recognized version required.
func validateReviewVersions(versions []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(versions) < 1 {
		return append(errs, field.Required(path, fmt.Sprintf("must specify one of %v", strings.Join(reviewVersions, ", "))))
	}
	seen := map[string]bool{}
	accepted := false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(path.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(path.Index(i), v, msg))
		}
		if has(reviewVersions, v) {
			accepted = true
		}
	}
	if !accepted {
		errs = append(errs, field.Invalid(path, versions, fmt.Sprintf("must include at least one of %v", strings.Join(reviewVersions, ", "))))
	}
	return errs
}

// validateMatchConditions follows validateMatchConditions and
// validateMatchCondition: at most 64, unique qualified names, expressions
// that compile in the API server's CEL environment for new expressions.
func validateMatchConditions(m []admissionregistrationv1.MatchCondition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	if len(m) > 64 {
		errs = append(errs, field.TooMany(path, len(m), 64))
	}
	for i, mc := range m {
		p := path.Index(i)
		if expr := strings.TrimSpace(mc.Expression); expr == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
		} else {
			errs = append(errs, compileCondition(expr, p.Child("expression"))...)
		}
		if mc.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(mc.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), mc.Name, msg).WithOrigin("format=qualified-name"))
			}
		}
		if mc.Name != "" {
			if names.Has(mc.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), mc.Name))
			} else {
				names.Insert(mc.Name)
			}
		}
	}
	return errs
}

// compileCondition follows validateMatchConditionsExpression and
// convertCELErrorToValidationError.
func compileCondition(expr string, path *field.Path) field.ErrorList {
	compiler := plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	res := compiler.CompileCELExpression(&matchconditions.MatchCondition{Expression: expr},
		plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
	if res.Error == nil {
		return nil
	}
	if ce := res.Error; ce != nil {
		switch ce.Type {
		case cel.ErrorTypeRequired:
			return field.ErrorList{field.Required(path, ce.Detail)}
		case cel.ErrorTypeInvalid:
			return field.ErrorList{field.Invalid(path, expr, ce.Detail)}
		case cel.ErrorTypeInternal:
			return field.ErrorList{field.InternalError(path, ce)}
		}
	}
	return field.ErrorList{field.InternalError(path, fmt.Errorf("unsupported error type: %w", res.Error))}
}
