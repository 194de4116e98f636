package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/junit"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/rootdirs"
)

type RunOptions struct {
	CommonOptions
	EndpointFlag
	Streams
	Hold            string
	SyncFrequency   time.Duration
	RepublishPeriod time.Duration
	StatsPeriod     time.Duration
	ServeOIDC       string
	Report          string
	JUnit           string
	Sidecars        SidecarOptions

	hold    time.Duration // <0: until interrupted
	outcome *node.Outcome // the last Run's, for RunPod
}

// complete takes the files of the arguments, the driver's socket and the
// root dir.
func (o *RunOptions) Complete(args []string) error {
	o.Filenames = FilesFrom(o.Filenames, args)
	if err := o.completeEndpoint(); err != nil {
		return err
	}
	return o.completeRootDir()
}

func (o *RunOptions) Run(ctx context.Context) error {
	s := o.Streams
	o.lockAs = "run"
	createdDirs, err := o.prepare(ctx, s, o.endpoint)
	if err != nil {
		return err
	}
	defer o.Apiserver.Stop()
	ss := newSession("run", &o.CommonOptions, s, o.Apiserver.Conn(&csiclient.Dialer{Endpoint: o.endpoint}), false, createdDirs)
	if o.ServeOIDC != "" {
		octx, stop := context.WithCancel(ctx)
		base, wait, err := serveOIDC(octx, o.ServeOIDC, ss.tokens)
		if err != nil {
			stop()
			rootdirs.Remove(createdDirs)
			return err
		}
		defer func() { stop(); _ = wait() }()
		ss.announce(fmt.Sprintf("OIDC discovery for issuer %s at %s/.well-known/openid-configuration, keys at %s/openid/v1/jwks", o.Issuer, base, base))
	}
	o.syncFrequency = o.SyncFrequency
	ss.endpoint = o.Endpoint
	page := newReportPage(ss, o.Report)
	junitSink := junit.NewSink()
	if o.JUnit != "" {
		ss.trace.AddSink(junitSink)
	}
	if err := o.Sidecars.attach(ss, o.endpoint); err != nil {
		rootdirs.Remove(createdDirs)
		return err
	}
	plan := ss.plan(ctx, o.hold, o.runningSchedule())
	plan.Controller = o.Sidecars.controller
	plan.ProvisionDefault = ss.provisionDefault(o.Sidecars.KeepVolumes)
	ss.attachAPIServer(ctx, &plan)
	out := ss.lifecycle(ctx, plan)
	o.outcome = out
	// Ctrl-C is how --hold forever ends; SIGTERM, SIGHUP and SIGQUIT stop
	// the run from outside (a timeout, a closed terminal): interrupts.
	out.HoldEnded = out.HoldEnded && endedByCtrlC(ctx)
	ss.finishAPIServer(out)
	exit := ss.exitErr(out)
	if err := page.write(fmt.Sprintf("csi-kubelet-sim run: %s, %s", plural(out.Pods, "pod"), o.Release.Describe()), o.Apiserver.ReportHeader(ss.reportHeader(out, exit))); err != nil && exit == nil {
		exit = WithCode(ExitEnvironment, err)
	}
	if o.JUnit != "" {
		if err := ss.writeJUnit(o.JUnit, junitSink, out, exit); err != nil {
			if exit == nil {
				exit = WithCode(ExitEnvironment, fmt.Errorf("--junit: %w", err))
			} else {
				o.tell().Warning(fmt.Sprintf("--junit: %v", err))
			}
		}
	}
	ss.apiServerSummary()
	ss.summary(out, exit)
	return exit
}

func (o *RunOptions) Validate() error {
	switch strings.ToLower(o.Hold) {
	case "forever", "inf", "infinite":
		o.hold = -1
	default:
		d, err := time.ParseDuration(o.Hold)
		if o.Hold == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 {
			return WithCode(ExitUsage, fmt.Errorf("--hold %q: want a duration such as 30s, or 'forever'", o.Hold))
		}
		o.hold = d
	}
	return nil
}

// writeJUnit writes the run's JUnit file (--junit), scrubbed of the run's
// secrets.
func (ss *session) writeJUnit(path string, sink *junit.Sink, out *node.Outcome, exit error) error {
	doc := junit.Suites(sink.Operations(), ss.opts.Release, out, LeftoverText(out.Leftovers), exit, time.Since(ss.started))
	return junit.Write(path, doc.Cleaned(ss.red.TextLines))
}

func (o *RunOptions) runningSchedule() node.RunningSchedule {
	return node.RunningSchedule{SyncFrequency: o.SyncFrequency, RepublishPeriod: o.RepublishPeriod, StatsPeriod: o.StatsPeriod}
}
