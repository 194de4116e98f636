// Command csi-kubelet-sim shows a CSI driver exactly what a kubelet will
// send it, without a cluster.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/buildinfo"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// version is set at build time with -ldflags "-X main.version=..." (the
// Makefile does); the engine reports it.
var version = "dev"

func main() {
	buildinfo.Version = version
	session.OneShotGC() // gc.go: most commands exit before a collection would free anything
	// A closed stdout (| head) must not kill the run before teardown: with
	// SIGPIPE ignored, writes fail and the volumes are still unpublished.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := interrupts(context.Background())
	code := run(ctx, os.Args[1:], session.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}

// sameDelivery is how long after the first interrupt further ones count
// as copies of it. A terminal's Ctrl-C, GNU timeout and CI runners signal
// the whole process group, and some signal the process and then its group:
// the copies arrive within milliseconds, and must not count as the user's
// second Ctrl-C, which abandons the teardown. A person who means it presses
// again later; a second is long enough to read "interrupted" and short
// enough not to be noticed.
const sameDelivery = time.Second

// stopSignals end a command with its teardown (exit 130): Ctrl-C, SIGTERM,
// SIGHUP (the terminal or SSH session closed: the volumes must still be
// unpublished; what the run prints then goes nowhere) and SIGQUIT (Ctrl-\,
// whose goroutine dump Go's default handler would print before exiting 2
// with everything left mounted: the dump is printed here, then the
// teardown runs).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// interrupts returns a context that the first Ctrl-C (or SIGTERM) cancels,
// ending the run and starting its teardown, and that carries a second
// context, for the teardown, which a second signal cancels (one that comes
// sameDelivery or more after the first): the call in flight is abandoned
// and the command exits with what is left.
func interrupts(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	tctx, tcancel := context.WithCancel(context.WithoutCancel(parent))
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	go watchInterrupts(sigs, done, time.Now, func() { dumpGoroutines(os.Stderr) },
		func(sig os.Signal) { cancel(session.InterruptedBy{Sig: sig}) }, tcancel)
	return session.WithTeardown(ctx, tctx), func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
		tcancel()
	}
}

// watchInterrupts cancels the run at the first signal and the teardown at
// the first one that comes sameDelivery or more after it; the signals in
// between are copies of the first (a group signal) and count for nothing.
// Each SIGQUIT first dumps the goroutines (what a user pressing Ctrl-\
// asks for), then counts as any other signal.
func watchInterrupts(sigs <-chan os.Signal, done <-chan struct{}, now func() time.Time, dump func(), cancel func(os.Signal), abandon func()) {
	var first time.Time
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGQUIT {
				dump()
			}
			t := now()
			switch {
			case first.IsZero():
				first = t
				cancel(sig)
			case t.Sub(first) >= sameDelivery:
				abandon()
			}
		case <-done:
			return
		}
	}
}

// dumpGoroutines writes every goroutine's stack, as Go's own SIGQUIT
// handler does.
func dumpGoroutines(w io.Writer) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	fmt.Fprintf(w, "SIGQUIT: goroutine dump follows; then the teardown, as for SIGTERM\n%s\n", buf)
}
