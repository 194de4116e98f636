// Package exitcode answers which exit code a command's error carries (the
// README's "Exit codes"): 0 ok, 1 the driver failed a call or a check, 2
// bad usage or input, 3 the environment, 130 interrupted; and which of
// the host's errors are the environment's (IsEnvironment). The engine and
// the packages under it (session/controlplane) give their errors a code
// here; session re-exports them for the commands.
package exitcode

import "errors"

// The exit codes.
const (
	OK          = 0
	Failed      = 1 // the driver failed a call or a check
	Usage       = 2 // bad usage or bad input
	Environment = 3 // socket missing or unreachable, root dir unusable, driver timeout
	Interrupted = 130
)

// Error carries the exit code of a failed command.
type Error struct {
	Code int
	err  error
}

func (e *Error) Error() string { return e.err.Error() }
func (e *Error) Unwrap() error { return e.err }

// With gives err the exit code code.
func With(code int, err error) error { return &Error{Code: code, err: err} }

// Of is the exit code of a command's error: its own, else Failed.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var ee *Error
	if errors.As(err, &ee) {
		return ee.Code
	}
	return Failed
}
