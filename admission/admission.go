// Package admission runs the API server's mutating admission webhooks on
// the objects of the input before the kubelet sees them. It drives the
// API server's own plugin (k8s.io/apiserver's MutatingAdmissionWebhook)
// with a fake clientset that holds the input's MutatingWebhookConfiguration
// and Namespace objects, so that matching (rules, matchPolicy, selectors,
// CEL matchConditions), the AdmissionReview call (caBundle, timeouts,
// v1/v1beta1), JSONPatch and reinvocation are the API server's code.
package admission

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/authentication/user"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/apiserver/pkg/warning"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
)

// UserInfo is the user the API server puts in the AdmissionReview.
type UserInfo = remote.UserInfo

// DefaultUser is the user of a kubeadm cluster's admin.conf, which is what
// `kubectl apply` runs as on most test clusters.
var DefaultUser = remote.DefaultUser

// Options say how the webhooks are reached and who asks.
type Options struct {
	// Services maps a webhook's clientConfig.service, "namespace/name" or
	// "namespace/name:port", to a host:port the webhook listens on. The
	// TLS server name stays <name>.<namespace>.svc, as the API server sends.
	Services map[string]string
	User     UserInfo
	DryRun   bool
	// Namespaces are the input's Namespace objects; a namespace the input
	// uses without one gets an empty one (the API server refuses objects in
	// a namespace that does not exist).
	Namespaces []*corev1.Namespace
	// Default applies the API server's defaults to an object, as the API
	// server does after each patch (nil: none).
	Default func(runtime.Object)
}

// Admitter runs the mutating webhooks of a set of configurations.
type Admitter struct {
	opts    Options
	configs []*admissionregistrationv1.MutatingWebhookConfiguration
	store   *store
	plugin  *mutating.Plugin
	ifaces  admission.ObjectInterfaces
	rec     *recorder
	matcher *skipMatcher
}

// New builds the API server's mutating webhook plugin over the
// configurations (defaults already applied) and namespaces.
func New(opts Options, configs []*admissionregistrationv1.MutatingWebhookConfiguration) (*Admitter, error) {
	if opts.User.Name == "" {
		opts.User = DefaultUser
	}
	a := &Admitter{opts: opts, configs: configs, rec: &recorder{}, store: newStore()}
	for _, ns := range opts.Namespaces {
		if err := a.store.addNamespace(ns); err != nil {
			return nil, err
		}
	}
	for _, c := range configs {
		if err := a.store.addConfig(c); err != nil {
			return nil, err
		}
	}
	f, cl := factory{s: a.store}, client{s: a.store}
	p, err := mutating.NewMutatingWebhook(nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugin: %w", err)
	}
	p.SetAuthenticationInfoResolverWrapper(func(webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver {
		return &authInfo{rec: a.rec}
	})
	p.SetServiceResolver(serviceResolver(opts.Services))
	p.SetExternalKubeClientSet(cl)
	p.SetExternalKubeInformerFactory(f)
	if err := p.ValidateInitialization(); err != nil {
		return nil, fmt.Errorf("admission plugin: %w", err)
	}
	a.plugin = p
	a.matcher = newSkipMatcher(cl, f)
	a.ifaces = admission.NewObjectInterfacesFromScheme(newScheme(opts.Default))
	return a, nil
}

// Close releases the admitter (nothing runs in the background today).
func (a *Admitter) Close() {}

// withNameLabel adds the label the API server puts on every namespace
// (kubernetes.io/metadata.name; pkg/registry/core/namespace/strategy.go,
// PrepareForCreate), which namespaceSelectors often use.
func withNameLabel(ns *corev1.Namespace) *corev1.Namespace {
	ns = ns.DeepCopy()
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
	return ns
}

// AdmitCreate runs the mutating webhooks on the creation of obj, as the
// API server's admission chain does: every matching webhook in the order
// of the configurations' names, then, if any of them changed the object, a
// second round for the webhooks with reinvocationPolicy IfNeeded. It
// returns the object as it would be stored (obj itself is not changed).
func (a *Admitter) AdmitCreate(ctx context.Context, obj runtime.Object) (runtime.Object, *Report, error) {
	gvk, gvr, namespaced, err := remote.ResourceFor(obj)
	if err != nil {
		return nil, nil, err
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	m, err := metaOf(obj)
	if err != nil {
		return nil, nil, err
	}
	ns := ""
	if namespaced {
		ns = m.GetNamespace()
		// The API server refuses objects in a namespace that does not
		// exist; one the input uses without a Namespace object is taken as
		// existing, with only the label every namespace gets.
		if err := a.store.addNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return nil, nil, err
		}
	}
	opts := &metav1.CreateOptions{FieldManager: "kubectl-create"}
	if a.opts.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	// The create handler sets the options' kind before admission
	// (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go).
	opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("CreateOptions"))
	u := &user.DefaultInfo{Name: a.opts.User.Name, UID: a.opts.User.UID, Groups: a.opts.User.Groups}
	record := admission.NewAttributesRecord(obj, nil, gvk, ns, m.GetName(), gvr, "", admission.Create, opts, a.opts.DryRun, u)
	attrs := &annotatedAttributes{Attributes: record, rec: a.rec}
	before := obj.DeepCopyObject()
	a.rec.reset()
	ctx = warning.WithWarningRecorder(ctx, a.rec)
	err = a.admit(ctx, attrs)
	report := a.report(ctx, before, attrs)
	if err != nil {
		return nil, report, a.classify(err, report)
	}
	out := attrs.GetObject()
	report.Changes = describeChanges(before, out)
	if ns, ok := out.(*corev1.Namespace); ok {
		// Later objects are matched against the namespace as stored.
		if err := a.store.namespaces.Update(withNameLabel(ns)); err != nil {
			return nil, report, err
		}
	}
	return out, report, nil
}

// admit follows the admission chain's reinvoker
// (staging/src/k8s.io/apiserver/pkg/admission/reinvocation.go, Admit): one
// round, and a second one if a webhook asked for it.
func (a *Admitter) admit(ctx context.Context, attrs admission.Attributes) error {
	if err := a.plugin.Admit(ctx, attrs, a.ifaces); err != nil {
		return err
	}
	s := attrs.GetReinvocationContext()
	if s.ShouldReinvoke() {
		s.SetIsReinvoke()
		return a.plugin.Admit(ctx, attrs, a.ifaces)
	}
	return nil
}

// serviceResolver maps a webhook's service to the address given for it.
type serviceResolver map[string]string

func (s serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	key := namespace + "/" + name
	withPort := key + ":" + strconv.Itoa(int(port))
	addr, ok := s[withPort]
	if !ok {
		addr, ok = s[key]
	}
	if !ok {
		return nil, fmt.Errorf("service %s has no address here: give --webhook-service %s=HOST:PORT", withPort, withPort)
	}
	return &url.URL{Scheme: "https", Host: addr}, nil
}
