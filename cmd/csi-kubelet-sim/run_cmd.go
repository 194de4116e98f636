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
	Endpoint string
	Hold     string

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
	out := ss.lifecycle(ctx, o.holdFor)
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

// holdFor is the pod's running time: the volumes stay published.
func (o *runOptions) holdFor(ctx context.Context) {
	if o.hold == 0 {
		return
	}
	if o.hold < 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTimer(o.hold)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func warnTo(s streams) func(string) {
	return func(msg string) { fmt.Fprintf(s.Err, "warning: %s\n", msg) }
}
