package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

type runOptions struct {
	commonOptions
	endpointFlag
	streams
	Hold            string
	SyncFrequency   time.Duration
	RepublishPeriod time.Duration
	StatsPeriod     time.Duration
	ServeOIDC       string
	Report          string
	JUnit           string
	sidecars        sidecarOptions

	hold time.Duration // <0: until interrupted
}

const runLong = `Run the kubelet's node lifecycle for the pods of the manifests against a CSI
driver's socket, and print every call: the node-driver-registrar's and the
kubelet's registration, the capability queries, NodeStageVolume and
NodePublishVolume with the kubelet's paths and volume_context, the running
pod (--hold: pod syncs, republish, volume stats), then NodeUnpublishVolume and
NodeUnstageVolume and the kubelet's clean-up. Nothing is left behind.

Manifests come from -f and from the arguments (files, directories, - for
stdin), or with --kubeconfig and --pod from a running cluster: the pod and
what its volumes reference, read-only. Without a Pod, a default pod with one volume per lifecycle mode the
CSIDriver allows is used, and the trace says so; its persistent volume is
provisioned (a claim of a StorageClass of the driver) when the driver's
controller offers CREATE_DELETE_VOLUME, else a PV with the handle
sim-volume-1 (--volume-handle: one of the driver's own). An input with nothing the
kubelet reads, or pods with no CSI volume of the driver, exits 2.

A claim with a StorageClass of the driver and no PV is provisioned first, as
the external-provisioner and external-attacher do (CreateVolume, the PV,
ControllerPublishVolume), and detached and deleted after the pods
(docs/kubelet.md §22, §23).`

const runExample = `  # your pod and its driver's objects, against your driver
  csi-kubelet-sim run -f manifests/ --endpoint unix:///run/csi/csi.sock

  # every file the shell finds, JSON lines for CI and a JUnit report
  csi-kubelet-sim run -f *.yaml --endpoint /run/csi/csi.sock -o json --junit run.xml

  # keep the pod running 5 minutes with a republish every 10s
  csi-kubelet-sim run -f pod.yaml --endpoint /run/csi/csi.sock --hold 5m --republish-period 10s

  # a StorageClass and a claim, no PV: the volume is created, attached, and deleted afterwards
  csi-kubelet-sim run -f fixtures/samples/provision --endpoint /run/csi/csi.sock -v

  # a pod of a running cluster (read-only) replayed against your local driver
  csi-kubelet-sim run --kubeconfig ~/.kube/config --pod shop/checkout --endpoint /run/csi/csi.sock

  # the kubelet of 1.33 on an SELinux node
  csi-kubelet-sim run -f pod.yaml --endpoint /run/csi/csi.sock --kubelet-version 1.33 --selinux`

func newRunCommand(s streams) *cobra.Command {
	o := &runOptions{streams: s}
	c := newCommandFor(addRunFlags, o, &cobra.Command{
		Use:     "run [-f FILE]... --endpoint unix:///PATH [flags] [FILE...]",
		Short:   "Run the kubelet's node lifecycle for the pods against a driver, and print every call",
		Long:    runLong,
		Example: runExample,
	})
	markFilenameFlag(c)
	return c
}

// complete takes the files of the arguments, the driver's socket and the
// root dir.
func (o *runOptions) complete(args []string) error {
	o.Filenames = filesFrom(o.Filenames, args)
	if err := o.completeEndpoint(); err != nil {
		return err
	}
	return o.completeRootDir()
}

func (o *runOptions) run(ctx context.Context) error {
	s := o.streams
	o.lockAs = "run"
	createdDirs, err := o.prepare(ctx, s, o.endpoint)
	if err != nil {
		return err
	}
	defer o.apiserver.stop()
	ss := newSession("run", &o.commonOptions, s, o.apiserver.conn(&csiclient.Dialer{Endpoint: o.endpoint}), false, createdDirs)
	if o.ServeOIDC != "" {
		octx, stop := context.WithCancel(ctx)
		base, wait, err := serveOIDC(octx, o.ServeOIDC, ss.tokens)
		if err != nil {
			stop()
			removeDirs(createdDirs)
			return err
		}
		defer func() { stop(); _ = wait() }()
		ss.announce(fmt.Sprintf("OIDC discovery for issuer %s at %s/.well-known/openid-configuration, keys at %s/openid/v1/jwks", o.Issuer, base, base))
	}
	o.syncFrequency = o.SyncFrequency
	ss.endpoint = o.Endpoint
	page := newReportPage(ss, o.Report)
	junit := newJUnitSink()
	if o.JUnit != "" {
		ss.trace.AddSink(junit)
	}
	if err := o.sidecars.attach(ss, o.endpoint); err != nil {
		removeDirs(createdDirs)
		return err
	}
	plan := ss.plan(ctx, o.hold, o.runningSchedule())
	plan.Controller = o.sidecars.controller
	plan.ProvisionDefault = ss.provisionDefault(o.sidecars.KeepVolumes)
	o.apiserver.attach(ctx, ss, &plan)
	out := ss.lifecycle(ctx, plan)
	// Ctrl-C is how --hold forever ends; SIGTERM, SIGHUP and SIGQUIT stop
	// the run from outside (a timeout, a closed terminal): interrupts.
	out.HoldEnded = out.HoldEnded && endedByCtrlC(ctx)
	o.apiserver.finish(ss, out)
	exit := ss.exitErr(out)
	if err := page.write(fmt.Sprintf("csi-kubelet-sim run: %s, %s", plural(out.Pods, "pod"), o.release.Describe()), o.apiserver.reportHeader(ss.reportHeader(out, exit))); err != nil && exit == nil {
		exit = withCode(exitEnvironment, err)
	}
	if o.JUnit != "" {
		if err := writeRunJUnit(o.JUnit, junit, ss, out, exit); err != nil {
			if exit == nil {
				exit = withCode(exitEnvironment, fmt.Errorf("--junit: %w", err))
			} else {
				warnTo(s)(fmt.Sprintf("--junit: %v", err))
			}
		}
	}
	o.apiserver.summary(ss)
	ss.summary(out, exit)
	return exit
}

func (o *runOptions) validate() error {
	switch strings.ToLower(o.Hold) {
	case "forever", "inf", "infinite":
		o.hold = -1
	default:
		d, err := time.ParseDuration(o.Hold)
		if o.Hold == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return withCode(exitUsage, fmt.Errorf("--hold %q: want a duration such as 30s, or 'forever'", o.Hold))
		}
		o.hold = d
	}
	return nil
}

func (o *runOptions) runningSchedule() node.RunningSchedule {
	return node.RunningSchedule{SyncFrequency: o.SyncFrequency, RepublishPeriod: o.RepublishPeriod, StatsPeriod: o.StatsPeriod}
}
