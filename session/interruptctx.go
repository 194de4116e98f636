package session

import (
	"context"
	"errors"
	"os"
)

// A command's context carries, besides its own end (the first interrupt),
// the context its teardown runs under, which only a second interrupt ends.

type teardownKey struct{}

// withTeardown is ctx carrying tctx as its teardown's context.
func WithTeardown(ctx, tctx context.Context) context.Context {
	return context.WithValue(ctx, teardownKey{}, tctx)
}

// interruptedBy is the cause of a run's end by a signal: Ctrl-C (SIGINT)
// is how `run --hold forever` is meant to end; the others stop it from
// outside.
type InterruptedBy struct{ Sig os.Signal }

func (e InterruptedBy) Error() string { return "interrupted by " + e.Sig.String() }

// endedByCtrlC tells whether ctx ended by Ctrl-C (SIGINT).
func endedByCtrlC(ctx context.Context) bool {
	var ib InterruptedBy
	return errors.As(context.Cause(ctx), &ib) && ib.Sig == os.Interrupt
}

// teardownContext is the context a command tears down with after ctx
// ended: cancelled only by a second interrupt.
func teardownContext(ctx context.Context) context.Context {
	if t, ok := ctx.Value(teardownKey{}).(context.Context); ok {
		return t
	}
	return context.WithoutCancel(ctx)
}
