package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// Exit codes (README, "Exit codes").
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

// exitCode is the exit code of a command's error.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailed
}

func warnTo(s streams) func(string) {
	// A warning can quote the input or a cluster's answer: through the
	// one escaping function, as every printed field.
	return func(msg string) { fmt.Fprintf(s.Err, "warning: %s\n", csiclient.Redactor{}.Text(msg)) }
}
