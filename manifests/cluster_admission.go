package manifests

import (
	"fmt"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
)

// Namespaces returns the Namespace objects, sorted by name.
func (c *Cluster) Namespaces() []*corev1.Namespace {
	out := make([]*corev1.Namespace, 0, len(c.namespaces))
	for _, n := range c.namespaces {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// MutatingWebhookConfigurations returns the configurations, sorted by
// name (the order the API server calls them in).
func (c *Cluster) MutatingWebhookConfigurations() []*admissionregistrationv1.MutatingWebhookConfiguration {
	out := make([]*admissionregistrationv1.MutatingWebhookConfiguration, 0, len(c.webhooks))
	for _, w := range c.webhooks {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Objects returns every object but the webhook configurations, in a
// stable order: namespaces, then the others by kind and name, pods last
// in the order read (what admission is applied to).
func (c *Cluster) Objects() []any {
	var out []any
	for _, n := range c.Namespaces() {
		out = append(out, n)
	}
	for _, d := range c.CSIDrivers() {
		out = append(out, d)
	}
	for _, pv := range c.PersistentVolumes() {
		out = append(out, pv)
	}
	out = appendSorted(out, c.pvcs)
	out = appendSorted(out, c.secrets)
	out = appendSorted(out, c.sas)
	out = appendSorted(out, c.vas)
	out = appendSorted(out, c.nodes)
	for _, p := range c.pods {
		out = append(out, p)
	}
	return out
}

func appendSorted[T any](out []any, m map[string]T) []any {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// Replace puts obj in place of the object of the same kind, namespace and
// name (a webhook's mutated version); it keeps the original's source.
func (c *Cluster) Replace(obj any) error {
	k, err := objectKey(obj)
	if err != nil {
		return err
	}
	if _, ok := c.sources[k]; !ok {
		return fmt.Errorf("replace: no %s", k)
	}
	c.store(obj)
	return nil
}
