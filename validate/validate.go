// Package validate checks the objects of the input as the API server of a
// release would (and, with --apiserver, as a real one does), and against
// the driver on a socket: `csi-kubelet-sim validate`.
package validate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/admission"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/replay"
)

// finding is one result of validate.
type finding struct {
	Source   string `json:"source"`
	Object   string `json:"object"`
	Severity string `json:"severity"` // error (the API server refuses), warning, mismatch (the live driver disagrees), info
	Message  string `json:"message"`
}

type ValidateOptions struct {
	Filenames []string
	Recursive bool
	session.ReleaseFlags
	session.OutputFlag
	session.EndpointFlag
	session.TimeoutFlag
	session.Streams
	APIServer bool
	Live      replay.Options

	// Printer takes the findings, once all are in: the command's printer;
	// nil: they are only judged (the exit code).
	Printer FindingsObserver
}

// FindingsObserver takes validate's findings, in their order.
type FindingsObserver interface {
	Findings([]Finding)
}

// Finding is one result of validate, where it was found.
type Finding struct {
	SchemaVersion int    `json:"schemaVersion"`
	Source        string `json:"source"`
	Object        string `json:"object"`
	Severity      string `json:"severity"` // error (the API server refuses), warning, mismatch (the live driver disagrees), info
	Message       string `json:"message"`
	Line          int    `json:"line,omitempty"`
}

// Text is the finding's line of text output.
func (f Finding) Text() string {
	src := f.Source
	if f.Line > 0 {
		src = fmt.Sprintf("%s: line %d", src, f.Line)
	}
	if f.Object == "" {
		return fmt.Sprintf("%-8s %s: %s", strings.ToUpper(f.Severity), src, f.Message)
	}
	return fmt.Sprintf("%-8s %s: %s: %s", strings.ToUpper(f.Severity), src, f.Object, f.Message)
}

// complete takes the files of the arguments (or --pod) and the release.
func (o *ValidateOptions) Complete(args []string) error {
	o.Filenames = session.FilesFrom(o.Filenames, args)
	if len(o.Filenames) == 0 && o.Live.Pod == "" {
		return session.WithCode(session.ExitUsage, fmt.Errorf("validate: no input: give files with -f or as arguments, or --pod"))
	}
	if err := o.Live.Check(o.Filenames); err != nil {
		return err
	}
	if o.Live.Pod != "" && o.APIServer {
		return session.WithCode(session.ExitUsage, errors.New("--apiserver judges manifests before they are created; the objects of --pod are already in their cluster"))
	}
	if err := o.ValidateOutput(); err != nil {
		return err
	}
	if err := o.CompleteRelease(); err != nil {
		return err
	}
	return o.checkAPIServerFlags(o.Release.Version)
}

func (o *ValidateOptions) Validate() error { return nil }

// run judges CSIDriver objects as the API server would (defaults,
// validation, warnings), the driver names of PVs and inline volumes, and,
// with --endpoint, the objects against the live driver.
func (o *ValidateOptions) Run(ctx context.Context) error {
	s := o.Streams
	defaults := o.Release.APIServerDefaults()
	loader := &manifests.Loader{Stdin: s.In, Defaults: defaults, Warn: session.WarnTo(s), NoValidation: true, Recursive: o.Recursive}
	raws := &rawDocs{}
	if o.APIServer {
		loader.Raw = raws.add
	}
	c, loadErr := o.load(ctx, loader, defaults, session.WarnTo(s))
	if c == nil {
		if ee := (*session.ExitError)(nil); errors.As(loadErr, &ee) {
			return loadErr // --pod: its own exit code (an unreachable cluster is 3)
		}
		return session.WithCode(session.ExitUsage, loadErr)
	}
	p := &preflight{loader: loader, c: c}
	webhooks, err := webhookFindings(ctx, c, s)
	if err != nil {
		return err
	}
	findings := p.problems(loadErr)
	findings = append(findings, p.locate(objectFindings(c, defaults))...)
	findings = append(findings, p.locate(classFindings(c))...)
	findings = append(findings, p.locate(requiredFindings(c))...)
	findings = append(findings, p.references()...)
	findings = append(findings, p.locate(webhooks)...)
	findings = dropValid(findings)
	var apiErr error
	if o.APIServer {
		api, err := o.apiServerFindings(ctx, p, raws)
		apiErr = err
		findings = append(findings, api...)
	}
	p.sort(findings)
	if len(findings) == 0 {
		return session.WithCode(session.ExitUsage, fmt.Errorf("nothing to validate in %s: no CSIDriver, no CSI PersistentVolume, no StorageClass, no Pod with a CSI volume and no MutatingWebhookConfiguration", strings.Join(o.Filenames, ", ")))
	}
	var liveErr error
	if o.Endpoint != "" {
		live, driver, err := liveFindings(ctx, c, o)
		liveErr = err
		findings = append(findings, p.locate(live)...)
		if driver != nil {
			findings = append(findings, p.podDrivers(driver)...)
		}
	}
	// What the objects are worth is printed even when the driver cannot be
	// reached; invalid objects then decide the exit code, else the driver.
	if o.Printer != nil {
		o.Printer.Findings(exported(findings))
	}
	exit := validateExit(findings)
	for _, e := range []struct {
		err  error
		what string
	}{{apiErr, "not judged by the API server"}, {liveErr, "not compared with the driver"}} {
		if e.err == nil {
			continue
		}
		if ee := (*session.ExitError)(nil); errors.As(exit, &ee) && ee.Code == session.ExitUsage && session.ExitCode(e.err) != session.ExitInterrupted {
			fmt.Fprintf(s.Err, "warning: %s: %v\n", e.what, e.err)
			continue
		}
		return e.err
	}
	return exit
}

func objectFindings(c *manifests.Cluster, defaults manifests.Defaults) []finding {
	var out []finding
	for _, d := range c.CSIDrivers() {
		src := c.SourceOf("CSIDriver", "", d.Name).String()
		obj := "CSIDriver " + d.Name
		errs := manifests.CSIDriverErrors(d, defaults)
		for _, e := range errs {
			out = append(out, finding{src, obj, "error", e})
		}
		if len(errs) == 0 {
			// The API server warns only of objects it accepts
			// (rest.BeforeCreate: WarningsOnCreate after Validate).
			for _, w := range manifests.CSIDriverWarnings(d, defaults) {
				out = append(out, finding{src, obj, "warning", w})
			}
			out = append(out, finding{src, obj, "info", "valid; after defaulting: " + session.CSIDriverSummary(d)})
		}
	}
	known := func(name string) bool { _, ok := c.CSIDriver(name); return ok }
	for _, pv := range c.PersistentVolumes() {
		if pv.Spec.CSI == nil {
			continue
		}
		src := c.SourceOf("PersistentVolume", "", pv.Name).String()
		obj := "PersistentVolume " + pv.Name
		if !known(pv.Spec.CSI.Driver) {
			out = append(out, finding{src, obj, "warning", fmt.Sprintf("no CSIDriver named %q%s: the kubelet treats the driver as having none (attach required, no pod info, persistent volumes only)", pv.Spec.CSI.Driver, manifests.DidYouMean(pv.Spec.CSI.Driver, c.CSIDriverNames()))})
		}
	}
	// The pods' names and inline drivers are judged by the loader, what
	// they name by the reference check (preflight).
	return out
}

// liveFindings compares the CSIDriver objects with what the driver says
// of itself.
func liveFindings(ctx context.Context, c *manifests.Cluster, o *ValidateOptions) ([]finding, *liveDriver, error) {
	ep, err := csiclient.ParseEndpoint(o.Endpoint)
	if err != nil {
		return nil, nil, session.WithCode(session.ExitUsage, fmt.Errorf("--endpoint: %w", err))
	}
	if err := ep.Check(); err != nil {
		return nil, nil, session.WithCode(session.ExitEnvironment, err)
	}
	conn := &csiclient.Dialer{Endpoint: ep}
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, o.Timeout) }
	cctx, cancel := call()
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(cctx, &csi.GetPluginInfoRequest{})
	cancel()
	if err != nil {
		return nil, nil, session.WithCode(session.ExitEnvironment, fmt.Errorf("GetPluginInfo: %w", err))
	}
	name := info.GetName()
	src := "driver " + string(ep)
	var out []finding
	cctx, cancel = call()
	nodeCaps, err := csi.NewNodeClient(conn).NodeGetCapabilities(cctx, &csi.NodeGetCapabilitiesRequest{})
	cancel()
	if err != nil {
		return nil, nil, session.WithCode(session.ExitFailed, fmt.Errorf("NodeGetCapabilities: %w", err))
	}
	live := newLiveDriver(string(ep), name, nodeCaps)
	d, ok := c.CSIDriver(name)
	if !ok {
		out = append(out, finding{src, "driver " + name, "mismatch", fmt.Sprintf("the driver registers as %q but no CSIDriver has that name%s: the kubelet treats it as having none (attach required, no pod info, persistent volumes only)", name, manifests.DidYouMean(name, c.CSIDriverNames()))})
		return out, live, nil
	}
	publish := controllerPublishes(ctx, conn, o.Timeout)
	obj := "CSIDriver " + name
	switch {
	case *d.Spec.AttachRequired && !publish:
		out = append(out, finding{src, obj, "warning", "attachRequired is true but the driver has no ControllerPublishVolume: every pod waits for a VolumeAttachment that only the external-attacher marks attached; attachRequired: false skips attach"})
	case !*d.Spec.AttachRequired && publish:
		out = append(out, finding{src, obj, "mismatch", attachFalseButPublishes})
	}
	for _, cp := range nodeCaps.GetCapabilities() {
		if cp.GetRpc().GetType() == csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP && *d.Spec.FSGroupPolicy != storagev1.FileFSGroupPolicy {
			out = append(out, finding{src, obj, "info", fmt.Sprintf("the driver has VOLUME_MOUNT_GROUP: the kubelet sends volume_mount_group whenever the pod has an fsGroup, whatever fsGroupPolicy (%s) says", *d.Spec.FSGroupPolicy)})
		}
	}
	out = append(out, finding{src, obj, "info", fmt.Sprintf("the driver registers as %q (vendor version %s): this CSIDriver applies to it", name, info.GetVendorVersion())})
	return out, live, nil
}

// attachFalseButPublishes is validate's finding.
const attachFalseButPublishes = "attachRequired is false but the driver has PUBLISH_UNPUBLISH_VOLUME: ControllerPublishVolume is never called and NodeStage/NodePublish get no publish_context"

// controllerPublishes tells whether the driver has a controller service
// with PUBLISH_UNPUBLISH_VOLUME.
func controllerPublishes(ctx context.Context, conn grpc.ClientConnInterface, timeout time.Duration) bool {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pc, err := csi.NewIdentityClient(conn).GetPluginCapabilities(cctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		return false
	}
	hasController := false
	for _, c := range pc.GetCapabilities() {
		if c.GetService().GetType() == csi.PluginCapability_Service_CONTROLLER_SERVICE {
			hasController = true
		}
	}
	if !hasController {
		return false
	}
	cc, err := csi.NewControllerClient(conn).ControllerGetCapabilities(cctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		return false
	}
	for _, c := range cc.GetCapabilities() {
		if c.GetRpc().GetType() == csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME {
			return true
		}
	}
	return false
}

// exported are the findings as the printer takes them.
func exported(fs []located) []Finding {
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i] = Finding{SchemaVersion: csiclient.SchemaVersion, Source: f.Source, Object: f.Object, Severity: f.Severity, Message: f.Message, Line: f.Line}
	}
	return out
}

func validateExit(fs []located) error {
	var errs, refusals, mismatches int
	for _, f := range fs {
		switch {
		case f.Severity == "error" && strings.HasPrefix(f.Message, apiServerPrefix):
			refusals++
		case f.Severity == "error":
			errs++
		case f.Severity == "mismatch":
			mismatches++
		}
	}
	switch {
	case errs > 0 && refusals > 0:
		return session.WithCode(session.ExitUsage, fmt.Errorf("%d invalid field(s) or missing object(s) in the input; %d refusal(s) of the API server", errs, refusals))
	case errs > 0:
		return session.WithCode(session.ExitUsage, fmt.Errorf("%d invalid field(s) or missing object(s) in the input", errs))
	case refusals > 0:
		return session.WithCode(session.ExitUsage, fmt.Errorf("the API server refuses what validate accepts: %d refusal(s)", refusals))
	case mismatches > 0:
		return session.WithCode(session.ExitFailed, fmt.Errorf("%d mismatch(es) with the live driver", mismatches))
	}
	return nil
}

// webhookFindings judges the MutatingWebhookConfiguration objects for
// validate, in the admission helper.
func webhookFindings(ctx context.Context, c *manifests.Cluster, s session.Streams) ([]finding, error) {
	configs := c.MutatingWebhookConfigurations()
	if len(configs) == 0 {
		return nil, nil
	}
	a, err := admission.OpenHelper(s.Err, 0)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	invalid, err := a.Validate(ctx, configs)
	if err != nil {
		return nil, admission.Error(err)
	}
	var out []finding
	for i, cfg := range configs {
		src := c.SourceOf("MutatingWebhookConfiguration", "", cfg.Name).String()
		obj := "MutatingWebhookConfiguration " + cfg.Name
		for _, e := range invalid[i] {
			out = append(out, finding{src, obj, "error", e})
		}
		if len(invalid[i]) == 0 {
			out = append(out, finding{src, obj, "info", fmt.Sprintf("valid; %d webhook(s)", len(cfg.Webhooks))})
		}
	}
	return out, nil
}
