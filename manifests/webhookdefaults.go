package manifests

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetWebhookConfigurationDefaults applies the API server's defaults to a
// MutatingWebhookConfiguration, as
// pkg/apis/admissionregistration/v1/zz_generated.defaults.go
// (SetObjectDefaults_MutatingWebhookConfiguration) does in Kubernetes
// v1.37: each webhook, its service's port, its rules' scope. sideEffects
// and admissionReviewVersions have no default in v1: they are required.
func SetWebhookConfigurationDefaults(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		SetDefaultsMutatingWebhook(&c.Webhooks[i])
	}
}

// SetDefaultsMutatingWebhook follows SetDefaults_MutatingWebhook,
// SetDefaults_ServiceReference and SetDefaults_Rule
// (pkg/apis/admissionregistration/v1/defaults.go).
func SetDefaultsMutatingWebhook(h *admissionregistrationv1.MutatingWebhook) {
	if h.FailurePolicy == nil {
		h.FailurePolicy = ptr(admissionregistrationv1.Fail)
	}
	if h.MatchPolicy == nil {
		h.MatchPolicy = ptr(admissionregistrationv1.Equivalent)
	}
	if h.NamespaceSelector == nil {
		h.NamespaceSelector = &metav1.LabelSelector{}
	}
	if h.ObjectSelector == nil {
		h.ObjectSelector = &metav1.LabelSelector{}
	}
	if h.TimeoutSeconds == nil {
		h.TimeoutSeconds = ptr(int32(10))
	}
	if h.ReinvocationPolicy == nil {
		h.ReinvocationPolicy = ptr(admissionregistrationv1.NeverReinvocationPolicy)
	}
	if s := h.ClientConfig.Service; s != nil && s.Port == nil {
		s.Port = ptr(int32(443))
	}
	for j := range h.Rules {
		if h.Rules[j].Scope == nil {
			h.Rules[j].Scope = ptr(admissionregistrationv1.AllScopes)
		}
	}
}
