// Command csi-kubelet-sim shows a CSI driver exactly what a kubelet will
// send it, without a cluster.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	oneShotGC() // gc.go: most commands exit before a collection would free anything
	// A closed stdout (| head) must not kill the run before teardown: with
	// SIGPIPE ignored, writes fail and the volumes are still unpublished.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := interrupts(context.Background())
	code := run(ctx, os.Args[1:], streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}

type teardownKey struct{}

// sameDelivery is how long after the first interrupt further ones count
// as copies of it. A terminal's Ctrl-C, GNU timeout and CI runners signal
// the whole process group, and some signal the process and then its group:
// the copies arrive within milliseconds, and must not count as the user's
// second Ctrl-C, which abandons the teardown. A person who means it presses
// again later; a second is long enough to read "interrupted" and short
// enough not to be noticed.
const sameDelivery = time.Second

// interrupts returns a context that the first Ctrl-C (or SIGTERM) cancels,
// ending the run and starting its teardown, and that carries a second
// context, for the teardown, which a second signal cancels (one that comes
// sameDelivery or more after the first): the call in flight is abandoned
// and the command exits with what is left.
func interrupts(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	tctx, tcancel := context.WithCancel(context.WithoutCancel(parent))
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go watchInterrupts(sigs, done, time.Now, cancel, tcancel)
	return context.WithValue(ctx, teardownKey{}, tctx), func() {
		signal.Stop(sigs)
		close(done)
		cancel()
		tcancel()
	}
}

// watchInterrupts cancels the run at the first signal and the teardown at
// the first one that comes sameDelivery or more after it; the signals in
// between are copies of the first (a group signal) and count for nothing.
func watchInterrupts(sigs <-chan os.Signal, done <-chan struct{}, now func() time.Time, cancel, abandon func()) {
	var first time.Time
	for {
		select {
		case <-sigs:
			t := now()
			switch {
			case first.IsZero():
				first = t
				cancel()
			case t.Sub(first) >= sameDelivery:
				abandon()
			}
		case <-done:
			return
		}
	}
}

// teardownContext is the context a command tears down with after ctx
// ended: cancelled only by a second interrupt.
func teardownContext(ctx context.Context) context.Context {
	if t, ok := ctx.Value(teardownKey{}).(context.Context); ok {
		return t
	}
	return context.WithoutCancel(ctx)
}
