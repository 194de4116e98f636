package session

import (
	"fmt"
	"io"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
)

// Exit codes (README, "Exit codes"; package exitcode).
const (
	ExitOK          = exitcode.OK
	ExitFailed      = exitcode.Failed      // the driver failed a call or a check
	ExitUsage       = exitcode.Usage       // bad usage or bad input
	ExitEnvironment = exitcode.Environment // socket missing or unreachable, root dir unusable, driver timeout
	ExitInterrupted = exitcode.Interrupted
)

// Streams are a command's standard input, output and error.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// ExitError carries the exit code of a failed command.
type ExitError = exitcode.Error

// WithCode gives err the exit code code.
func WithCode(code int, err error) error { return exitcode.With(code, err) }

// ExitCode is the exit code of a command's error.
func ExitCode(err error) int { return exitcode.Of(err) }

// noArgsError refuses arguments to a command that reads no files.
func NoArgsError(cmd string, args []string) error {
	if len(args) > 0 {
		return WithCode(ExitUsage, fmt.Errorf("%s: unexpected arguments %v (it reads no files)", strings.TrimPrefix(cmd, "csi-kubelet-sim "), args))
	}
	return nil
}
