package manifests

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
)

const webhookInput = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: injector
  namespace: ignored
webhooks:
  - name: inject.example.com
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig:
      service: {namespace: webhooks, name: injector}
    rules:
      - operations: [CREATE]
        apiGroups: [""]
        apiVersions: [v1]
        resources: [pods]
---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: shop
spec:
  containers: [{name: c, image: busybox}]
`

// TestLoadWebhookConfiguration: the configuration is read with the API
// server's defaults (SetObjectDefaults_MutatingWebhookConfiguration) and
// its namespace cleared; the Namespace is read; Replace swaps a pod.
func TestLoadWebhookConfiguration(t *testing.T) {
	var warnings []string
	c, err := (&Loader{Stdin: strings.NewReader(webhookInput), Warn: func(s string) { warnings = append(warnings, s) }}).Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %v", warnings)
	}
	cfgs := c.MutatingWebhookConfigurations()
	if len(cfgs) != 1 || cfgs[0].Namespace != "" {
		t.Fatalf("configurations: %+v", cfgs)
	}
	h := cfgs[0].Webhooks[0]
	got := []string{string(*h.FailurePolicy), string(*h.MatchPolicy), string(*h.ReinvocationPolicy), string(*h.Rules[0].Scope)}
	want := []string{"Fail", "Equivalent", "Never", "*"}
	if strings.Join(got, " ") != strings.Join(want, " ") || *h.TimeoutSeconds != 10 || *h.ClientConfig.Service.Port != 443 ||
		h.NamespaceSelector == nil || h.ObjectSelector == nil {
		t.Errorf("defaults: %v timeout %d port %d selectors %v %v", got, *h.TimeoutSeconds, *h.ClientConfig.Service.Port, h.NamespaceSelector, h.ObjectSelector)
	}
	if ns := c.Namespaces(); len(ns) != 1 || ns[0].Name != "shop" {
		t.Errorf("namespaces: %+v", ns)
	}
	if n := len(c.Objects()); n != 2 {
		t.Errorf("objects to admit: %d, want 2 (namespace, pod)", n)
	}
	p := c.Pods()[0].DeepCopy()
	p.Labels = map[string]string{"mutated": "yes"}
	if err := c.Replace(p); err != nil {
		t.Fatal(err)
	}
	if len(c.Pods()) != 1 || c.Pods()[0].Labels["mutated"] != "yes" || c.SourceOf("Pod", "shop", "p").Doc != 3 {
		t.Errorf("after Replace: %+v", c.Pods())
	}
	if err := c.Replace(&corev1.Pod{}); err == nil {
		t.Errorf("Replace of an unknown pod succeeded")
	}
	if err := c.Add(&admissionregistrationv1.MutatingWebhookConfiguration{}, Source{}); err != nil {
		t.Errorf("Add: %v", err)
	}
}

// Replace puts the new pod where Pod finds it too (the API server's
// version with its UID, read back by --apiserver), not only in Pods.
func TestReplacePodLookup(t *testing.T) {
	c := New()
	old := &corev1.Pod{}
	old.Namespace, old.Name, old.UID = "default", "web", "input-uid"
	if err := c.Add(old, Source{File: "pod.yaml"}); err != nil {
		t.Fatal(err)
	}
	stored := old.DeepCopy()
	stored.UID = "server-uid"
	if err := c.Replace(stored); err != nil {
		t.Fatal(err)
	}
	if p, ok := c.Pod("default", "web"); !ok || p.UID != "server-uid" {
		t.Errorf("Pod after Replace has UID %q, want server-uid", p.UID)
	}
	if ps := c.Pods(); len(ps) != 1 || ps[0].UID != "server-uid" {
		t.Errorf("Pods after Replace: %v", ps)
	}
}
