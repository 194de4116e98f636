// Package admission answers how a session's input is admitted: the
// input's MutatingWebhookConfiguration objects run on its other objects
// (or on each pod conformance creates), as the API server does on create,
// before the kubelet sees them, in the admission helper
// (cmd/csi-kubelet-sim-admission, through admission/remote).
package admission

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
)

// Options are the flags of the admission step: the input's
// MutatingWebhookConfiguration objects applied to its other objects, as
// the API server does on create, before the kubelet sees them. The
// helper's own stderr (its log with -v) goes to the stderr each call is
// given.
type Options struct {
	WebhookServices []string
	As              string
	AsGroups        []string
	WebhookDryRun   bool

	// Printer sees each object's admission: the command's printer; nil:
	// nothing is printed.
	Printer Observer
}

// Observer sees the admission of each object of the input: its
// webhooks' answers, and the refusal if any.
type Observer interface {
	Admitted(r *remote.Report, err error)
}

// Run checks the flags, then runs the mutating webhooks of the input on
// every other object of the input, in place, and hands each admission to
// the printer. A refusal is exit 2.
func (o *Options) Run(ctx context.Context, c *manifests.Cluster, defaults manifests.Defaults, verbose int, stderr io.Writer) error {
	if err := o.Check(); err != nil {
		return err
	}
	return o.Admit(ctx, c, c.Objects(), defaults, verbose, stderr)
}

// Admit runs the webhooks on the given objects of the cluster.
func (o *Options) Admit(ctx context.Context, c *manifests.Cluster, objects []any, defaults manifests.Defaults, verbose int, stderr io.Writer) error {
	configs := c.MutatingWebhookConfigurations()
	if len(configs) == 0 {
		return nil
	}
	a, err := o.start(ctx, c, configs, defaults, verbose, stderr, func(cfg *admissionregistrationv1.MutatingWebhookConfiguration) string {
		return c.SourceOf("MutatingWebhookConfiguration", "", cfg.Name).String() + ": "
	})
	if err != nil {
		return err
	}
	defer a.Close()
	for _, obj := range objects {
		ro, ok := obj.(runtime.Object)
		if !ok || remote.KindOf(ro) == "" {
			continue
		}
		out, report, err := a.AdmitCreate(ctx, ro)
		if report != nil && o.Printer != nil {
			o.Printer.Admitted(report, err)
		}
		if errors.Is(err, context.Canceled) {
			return exitcode.With(exitcode.Interrupted, fmt.Errorf("interrupted during the admission of %s %s: its webhooks were not waited for, and nothing reached the kubelet", remote.KindOf(ro), objectKey(ro)))
		}
		if err != nil {
			return Error(err)
		}
		if err := manifests.Validate(out, defaults); err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("%s %s after admission: %w", report.Kind, objName(report), err))
		}
		if err := c.Replace(out); err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("%s %s after admission: %w", report.Kind, objName(report), err))
		}
	}
	return nil
}

// start runs the admission helper, has it judge the configurations (an
// invalid one is exit 2, named with where prefix gives) and builds the
// webhook plugin over them.
func (o *Options) start(ctx context.Context, c *manifests.Cluster, configs []*admissionregistrationv1.MutatingWebhookConfiguration,
	defaults manifests.Defaults, verbose int, stderr io.Writer, where func(*admissionregistrationv1.MutatingWebhookConfiguration) string) (*remote.Helper, error) {
	a, err := OpenHelper(stderr, verbose)
	if err != nil {
		return nil, err
	}
	invalid, err := a.Validate(ctx, configs)
	if err != nil {
		a.Close()
		return nil, Error(err)
	}
	for i, errs := range invalid {
		if len(errs) > 0 {
			a.Close()
			return nil, exitcode.With(exitcode.Usage, fmt.Errorf("%sMutatingWebhookConfiguration %s is invalid: %s", where(configs[i]), configs[i].Name, aggregate(errs)))
		}
	}
	if err := a.Start(ctx, o.options(c), defaults, configs); err != nil {
		a.Close()
		return nil, Error(err)
	}
	return a, nil
}

// Error gives an admission failure its exit code: the API
// server refusing an object, or an input it cannot take, is the input's
// (2); a helper that died is the environment's (3); Ctrl-C is 130.
func Error(err error) error {
	var he *remote.HelperError
	switch {
	case errors.Is(err, context.Canceled):
		return exitcode.With(exitcode.Interrupted, errors.New("interrupted while the admission helper started: nothing reached the kubelet"))
	case errors.As(err, &he):
		return exitcode.With(exitcode.Environment, err)
	}
	return exitcode.With(exitcode.Usage, err)
}

// aggregate joins errors as apimachinery's aggregate error does: one
// alone, or several in brackets.
func aggregate(errs []string) string {
	if len(errs) == 1 {
		return errs[0]
	}
	return "[" + strings.Join(errs, ", ") + "]"
}

// OpenHelper starts the admission helper, its stderr to stderr; not
// finding it is exit 3.
func OpenHelper(stderr io.Writer, verbose int) (*remote.Helper, error) {
	a, err := remote.Open(stderr, verbose)
	if err != nil {
		return nil, exitcode.With(exitcode.Environment, err)
	}
	return a, nil
}

func (o *Options) options(c *manifests.Cluster) remote.Options {
	opts := remote.Options{
		Services:   map[string]string{},
		DryRun:     o.WebhookDryRun,
		Namespaces: c.Namespaces(),
	}
	for _, s := range o.WebhookServices {
		k, addr, _ := remote.ParseService(s) // checked in complete
		opts.Services[k] = addr
	}
	if o.As != "" {
		opts.User = remote.UserInfo{Name: o.As, Groups: o.AsGroups}
		if len(o.AsGroups) == 0 {
			opts.User.Groups = []string{"system:authenticated"}
		}
	}
	return opts
}

// Check validates the flags.
func (o *Options) Check() error {
	for _, s := range o.WebhookServices {
		if _, _, err := remote.ParseService(s); err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("--webhook-service %w", err))
		}
	}
	if len(o.AsGroups) > 0 && o.As == "" {
		return exitcode.With(exitcode.Usage, errors.New("--as-group needs --as"))
	}
	return nil
}

// Pods is the admission of the pods conformance creates by the input's
// MutatingWebhookConfigurations, as the API server would run it on each;
// nil when there are none. closeAdmit ends the helper.
func (o *Options) Pods(ctx context.Context, c *manifests.Cluster, defaults manifests.Defaults, stderr io.Writer) (admit func(*corev1.Pod) (*corev1.Pod, error), closeAdmit func(), err error) {
	if c == nil || len(c.MutatingWebhookConfigurations()) == 0 {
		return nil, func() {}, o.Check()
	}
	if err := o.Check(); err != nil {
		return nil, nil, err
	}
	a, err := o.start(ctx, c, c.MutatingWebhookConfigurations(), defaults, 0, stderr,
		func(*admissionregistrationv1.MutatingWebhookConfiguration) string { return "" })
	if err != nil {
		return nil, nil, err
	}
	return func(pod *corev1.Pod) (*corev1.Pod, error) {
		out, _, err := a.AdmitCreate(ctx, pod)
		if err != nil {
			return nil, err
		}
		admitted, ok := out.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("admission returned a %T for a pod", out)
		}
		return admitted, nil
	}, a.Close, nil
}

// objectKey is an object's namespace/name, or name.
func objectKey(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "?"
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

func objName(r *remote.Report) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}
