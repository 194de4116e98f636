package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// Exit codes (README, DESIGN.md).
const (
	exitOK          = 0
	exitFailed      = 1 // the driver failed a call or a check
	exitUsage       = 2 // bad usage or bad input
	exitEnvironment = 3 // socket missing or unreachable, root dir unusable, driver timeout
	exitInterrupted = 130
)

type streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// exitError carries the exit code of a failed command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

const usage = `csi-kubelet-sim shows a CSI driver exactly what a kubelet sends it, without a cluster.

Usage:
  csi-kubelet-sim run   -f FILE... --endpoint unix:///PATH [flags]   the kubelet's node lifecycle for the pod(s)
  csi-kubelet-sim plan  -f FILE... [--node-capabilities ...]         the same requests, printed, no driver needed
  csi-kubelet-sim conformance --endpoint ... [-f csidriver.yaml]       the driver checked against what a kubelet needs
  csi-kubelet-sim validate -f FILE... [--endpoint ...]                API-server validation of CSIDriver objects, and against the live driver
  csi-kubelet-sim tokens keygen|mint|jwks|serve|verify                 service-account tokens as the API server issues them
  csi-kubelet-sim version

Run 'csi-kubelet-sim COMMAND --help' for a command's flags.

Exit codes: 0 success; 1 the driver failed a call or a check; 2 bad usage or input;
3 environment (socket missing or unreachable, root dir unusable, no answer at registration);
130 interrupted. A driver that does not answer an operation within --timeout failed it: 1.
`

func run(ctx context.Context, args []string, s streams) int {
	if len(args) == 0 {
		fmt.Fprint(s.Err, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "run":
		err = runRun(ctx, args[1:], s)
	case "plan":
		err = runPlan(ctx, args[1:], s)
	case "conformance":
		err = runConformance(ctx, args[1:], s)
	case "validate":
		err = runValidate(ctx, args[1:], s)
	case "tokens":
		err = runTokens(ctx, args[1:], s)
	case "version", "--version":
		fmt.Fprintf(s.Out, "csi-kubelet-sim %s (simulates kubelet 1.%d to 1.%d)\n", version, 30, 37)
	case "help", "-h", "--help":
		fmt.Fprint(s.Out, usage)
	default:
		fmt.Fprintf(s.Err, "csi-kubelet-sim: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	return report(err, s.Err)
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// report prints a failed command's one-line error and returns its code.
func report(err error, w io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	code := exitFailed
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintf(w, "csi-kubelet-sim: %v\n", err)
	return code
}
