package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// admissionOptions are the flags of the admission step: the input's
// MutatingWebhookConfiguration objects applied to its other objects, as
// the API server does on create, before the kubelet sees them.
type AdmissionOptions struct {
	WebhookServices []string
	As              string
	AsGroups        []string
	WebhookDryRun   bool

	// Printer sees each object's admission: the command's printer; nil:
	// nothing is printed.
	Printer AdmissionObserver
}

// AdmissionObserver sees the admission of each object of the input: its
// webhooks' answers, and the refusal if any.
type AdmissionObserver interface {
	Admitted(r *remote.Report, err error)
}

// run checks the flags, then runs the mutating webhooks of the input on
// every other object of the input, in place, and prints the step. A
// refusal is exit 2.
func (o *AdmissionOptions) Run(ctx context.Context, c *manifests.Cluster, defaults manifests.Defaults, verbose int, s Streams) error {
	if err := o.check(); err != nil {
		return err
	}
	return o.admitCluster(ctx, c, defaults, verbose, s)
}

func (o *AdmissionOptions) admitCluster(ctx context.Context, c *manifests.Cluster, defaults manifests.Defaults, verbose int, s Streams) error {
	return o.admit(ctx, c, c.Objects(), defaults, verbose, s)
}

// admit runs the webhooks on the given objects of the cluster.
func (o *AdmissionOptions) admit(ctx context.Context, c *manifests.Cluster, objects []any, defaults manifests.Defaults, verbose int, s Streams) error {
	configs := c.MutatingWebhookConfigurations()
	if len(configs) == 0 {
		return nil
	}
	a, err := o.start(ctx, c, configs, defaults, verbose, s, func(cfg *admissionregistrationv1.MutatingWebhookConfiguration) string {
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
			return WithCode(ExitInterrupted, fmt.Errorf("interrupted during the admission of %s %s: its webhooks were not waited for, and nothing reached the kubelet", remote.KindOf(ro), objectKey(ro)))
		}
		if err != nil {
			return AdmissionError(err)
		}
		if err := manifests.Validate(out, defaults); err != nil {
			return WithCode(ExitUsage, fmt.Errorf("%s %s after admission: %w", report.Kind, objName(report), err))
		}
		if err := c.Replace(out); err != nil {
			return WithCode(ExitUsage, fmt.Errorf("%s %s after admission: %w", report.Kind, objName(report), err))
		}
	}
	return nil
}

// start runs the admission helper, has it judge the configurations (an
// invalid one is exit 2, named with where prefix gives) and builds the
// webhook plugin over them.
func (o *AdmissionOptions) start(ctx context.Context, c *manifests.Cluster, configs []*admissionregistrationv1.MutatingWebhookConfiguration,
	defaults manifests.Defaults, verbose int, s Streams, where func(*admissionregistrationv1.MutatingWebhookConfiguration) string) (*remote.Helper, error) {
	a, err := OpenHelper(s, verbose)
	if err != nil {
		return nil, err
	}
	invalid, err := a.Validate(ctx, configs)
	if err != nil {
		a.Close()
		return nil, AdmissionError(err)
	}
	for i, errs := range invalid {
		if len(errs) > 0 {
			a.Close()
			return nil, WithCode(ExitUsage, fmt.Errorf("%sMutatingWebhookConfiguration %s is invalid: %s", where(configs[i]), configs[i].Name, aggregate(errs)))
		}
	}
	if err := a.Start(ctx, o.options(c), defaults, configs); err != nil {
		a.Close()
		return nil, AdmissionError(err)
	}
	return a, nil
}

// admissionError gives an admission failure its exit code: the API
// server refusing an object, or an input it cannot take, is the input's
// (2); a helper that died is the environment's (3); Ctrl-C is 130.
func AdmissionError(err error) error {
	var he *remote.HelperError
	switch {
	case errors.Is(err, context.Canceled):
		return WithCode(ExitInterrupted, errors.New("interrupted while the admission helper started: nothing reached the kubelet"))
	case errors.As(err, &he):
		return WithCode(ExitEnvironment, err)
	}
	return WithCode(ExitUsage, err)
}

// aggregate joins errors as apimachinery's aggregate error does: one
// alone, or several in brackets.
func aggregate(errs []string) string {
	if len(errs) == 1 {
		return errs[0]
	}
	return "[" + strings.Join(errs, ", ") + "]"
}

// openHelper starts the admission helper; not finding it is exit 3.
func OpenHelper(s Streams, verbose int) (*remote.Helper, error) {
	a, err := remote.Open(s.Err, verbose)
	if err != nil {
		return nil, WithCode(ExitEnvironment, err)
	}
	return a, nil
}

func (o *AdmissionOptions) options(c *manifests.Cluster) remote.Options {
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

// check validates the flags.
func (o *AdmissionOptions) check() error {
	for _, s := range o.WebhookServices {
		if _, _, err := remote.ParseService(s); err != nil {
			return WithCode(ExitUsage, fmt.Errorf("--webhook-service %w", err))
		}
	}
	if len(o.AsGroups) > 0 && o.As == "" {
		return WithCode(ExitUsage, errors.New("--as-group needs --as"))
	}
	return nil
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
