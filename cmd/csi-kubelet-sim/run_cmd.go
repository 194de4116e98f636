package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

type runOptions struct {
	commonOptions
	Endpoint        string
	Hold            string
	SyncFrequency   time.Duration
	RepublishPeriod time.Duration
	StatsPeriod     time.Duration
	ServeOIDC       string

	endpoint csiclient.Endpoint
	hold     time.Duration // <0: until interrupted
}

func runRun(ctx context.Context, args []string, s streams) error {
	o := &runOptions{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(s.Err)
	o.addFlags(fs)
	fs.StringVar(&o.Endpoint, "endpoint", os.Getenv("CSI_ENDPOINT"), "the driver's socket: unix:///path or a path (default $CSI_ENDPOINT)")
	fs.StringVar(&o.Hold, "hold", "0", "how long the pod runs between mount and teardown: a duration, or 'forever' (until Ctrl-C)")
	fs.DurationVar(&o.SyncFrequency, "sync-frequency", time.Minute, "the kubelet's pod sync period: a pod is synced (and requiresRepublish volumes republished) every sync-frequency plus up to 50% jitter")
	fs.DurationVar(&o.RepublishPeriod, "republish-period", 0, "republish at this fixed period instead of the sync frequency with jitter (for fast tests)")
	fs.StringVar(&o.ServeOIDC, "serve-oidc", "", "serve the issuer's OIDC discovery and JWKS on this loopback address (e.g. 127.0.0.1:0) during the run")
	fs.DurationVar(&o.StatsPeriod, "volume-stats-agg-period", time.Minute, "the kubelet's volume stats period (each round waits 1x to 2x it); 0 disables NodeGetVolumeStats")
	if err := fs.Parse(args); err != nil {
		return withCode(exitUsage, err)
	}
	if fs.NArg() > 0 {
		return withCode(exitUsage, fmt.Errorf("run: unexpected arguments %v", fs.Args()))
	}
	if err := o.validate(); err != nil {
		return err
	}
	if err := o.complete(s, warnTo(s)); err != nil {
		return err
	}
	if err := o.endpoint.Check(); err != nil {
		return withCode(exitEnvironment, err)
	}
	createdDirs, err := o.prepareRootDir()
	if err != nil {
		return err
	}
	ss := newSession("run", &o.commonOptions, s, &csiclient.Dialer{Endpoint: o.endpoint}, false, createdDirs)
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
	out := ss.lifecycle(ctx, func(ctx context.Context) { ss.hold(ctx, o.hold, o.holdSchedule()) })
	exit := ss.exitErr(out)
	ss.summary(out, exit)
	return exit
}

func (o *runOptions) validate() error {
	ep, err := csiclient.ParseEndpoint(o.Endpoint)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--endpoint: %w", err))
	}
	o.endpoint = ep
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
	if o.RootDir != "" {
		abs, err := filepath.Abs(o.RootDir)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("--root-dir: %w", err))
		}
		o.RootDir = abs
	}
	return nil
}

func (o *runOptions) holdSchedule() holdSchedule {
	return holdSchedule{syncFrequency: o.SyncFrequency, republishPeriod: o.RepublishPeriod, statsPeriod: o.StatsPeriod}
}

func warnTo(s streams) func(string) {
	return func(msg string) { fmt.Fprintf(s.Err, "warning: %s\n", msg) }
}
