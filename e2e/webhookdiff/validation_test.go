package webhookdiff

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	"k8s.io/kubernetes/pkg/apis/admissionregistration/validation"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

func ptr[T any](v T) *T { return &v }

func validHook() admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name:                    "inject.example.com",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr("https://127.0.0.1:8443/inject")},
		AdmissionReviewVersions: []string{"v1"},
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
	}
}

// TestValidationMatchesAPIServer compares the simulator's validation with
// the API server's on configurations that break each rule.
func TestValidationMatchesAPIServer(t *testing.T) {
	cases := map[string]func(c *admissionregistrationv1.MutatingWebhookConfiguration){
		"valid":           func(*admissionregistrationv1.MutatingWebhookConfiguration) {},
		"bad config name": func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Name = "Bad_Name" },
		"no name":         func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Name = "" },
		"bad label": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Labels = map[string]string{"a": "b c"}
		},
		"webhook name not FQDN": func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Webhooks[0].Name = "inject" },
		"duplicate webhook": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, c.Webhooks[0])
		},
		"no side effects field": func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Webhooks[0].SideEffects = nil },
		"side effects Some": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].SideEffects = ptr(admissionregistrationv1.SideEffectClassSome)
		},
		"bad failure policy": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].FailurePolicy = ptr(admissionregistrationv1.FailurePolicyType("Sometimes"))
		},
		"bad match policy": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].MatchPolicy = ptr(admissionregistrationv1.MatchPolicyType("Fuzzy"))
		},
		"bad reinvocation": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ReinvocationPolicy = ptr(admissionregistrationv1.ReinvocationPolicyType("Always"))
		},
		"timeout 0": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].TimeoutSeconds = ptr(int32(0))
		},
		"timeout 31": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].TimeoutSeconds = ptr(int32(31))
		},
		"no review versions": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].AdmissionReviewVersions = nil
		},
		"unknown review version": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].AdmissionReviewVersions = []string{"v2", "v2", "V3"}
		},
		"http url": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = ptr("http://127.0.0.1/x")
		},
		"url with query": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = ptr("https://h/x?a=b#f")
		},
		"url and service": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "n", Name: "s"}
		},
		"no client config": func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Webhooks[0].ClientConfig.URL = nil },
		"bad service": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "N_s", Name: "", Path: ptr("no-slash"), Port: ptr(int32(70000))}}
		},
		"rule errors": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].Rules = []admissionregistrationv1.RuleWithOperations{
				{Operations: []admissionregistrationv1.OperationType{"*", "CREATE", "PATCH"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"*", ""}, APIVersions: []string{"*", "v1", ""}, Resources: []string{"*", "pods", "pods/*", "pods/status", "*/status", "deployments/status", ""}, Scope: ptr(admissionregistrationv1.ScopeType("Everywhere"))}},
				{Rule: admissionregistrationv1.Rule{Resources: []string{"*/*", "pods"}}},
				{},
			}
		},
		"selectors": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}
			c.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "In"}}}
		},
		"match conditions": func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{
				{Name: "ok", Expression: `object.metadata.name != ""`},
				{Name: "ok", Expression: "true"},
				{Name: "bad name!", Expression: " "},
				{Name: "", Expression: "1 +"},
				{Name: "not-bool", Expression: `"a string"`},
				{Name: "params", Expression: `params.x == 1`},
				{Name: "authz", Expression: `authorizer.group("").resource("pods").check("get").allowed()`},
			}
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "inject"}, Webhooks: []admissionregistrationv1.MutatingWebhook{validHook()}}
			edit(c)
			manifests.SetWebhookConfigurationDefaults(c)
			internal := &admissionregistration.MutatingWebhookConfiguration{}
			if err := legacyscheme.Scheme.Convert(c, internal, nil); err != nil {
				t.Fatal(err)
			}
			var want, got []string
			for _, e := range validation.ValidateMutatingWebhookConfiguration(internal) {
				want = append(want, e.Error())
			}
			for _, e := range admission.ValidateConfiguration(c) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("simulator:\n  %s\nAPI server:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if name == "valid" && len(want) != 0 {
				t.Errorf("valid case refused: %v", want)
			}
			if name != "valid" && len(want) == 0 {
				t.Errorf("case %q breaks no rule", name)
			}
		})
	}
}
