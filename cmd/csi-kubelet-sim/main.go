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
	// A closed stdout (| head) must not kill the run before teardown: with
	// SIGPIPE ignored, writes fail and the volumes are still unpublished.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
