package session

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit codes (README, "Exit codes").
const (
	ExitOK          = 0
	ExitFailed      = 1 // the driver failed a call or a check
	ExitUsage       = 2 // bad usage or bad input
	ExitEnvironment = 3 // socket missing or unreachable, root dir unusable, driver timeout
	ExitInterrupted = 130
)

type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// exitError carries the exit code of a failed command.
type ExitError struct {
	Code int
	err  error
}

func (e *ExitError) Error() string { return e.err.Error() }
func (e *ExitError) Unwrap() error { return e.err }

func WithCode(code int, err error) error { return &ExitError{Code: code, err: err} }

// exitCode is the exit code of a command's error.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailed
}

// noArgsError refuses arguments to a command that reads no files.
func NoArgsError(cmd string, args []string) error {
	if len(args) > 0 {
		return WithCode(ExitUsage, fmt.Errorf("%s: unexpected arguments %v (it reads no files)", strings.TrimPrefix(cmd, "csi-kubelet-sim "), args))
	}
	return nil
}
