// Command csi-kubelet-sim shows a CSI driver exactly what a kubelet will
// send it, without a cluster.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
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

// interrupts returns a context that the first Ctrl-C (or SIGTERM) cancels,
// ending the run and starting its teardown, and that carries a second
// context, for the teardown, which a second signal cancels: the call in
// flight is abandoned and the command exits with what is left.
func interrupts(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	tctx, tcancel := context.WithCancel(context.WithoutCancel(parent))
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 0; ; n++ {
			select {
			case <-sigs:
				if n == 0 {
					cancel()
				} else {
					tcancel()
				}
			case <-done:
				return
			}
		}
	}()
	return context.WithValue(ctx, teardownKey{}, tctx), func() {
		signal.Stop(sigs)
		close(done)
		cancel()
		tcancel()
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
