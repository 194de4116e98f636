// Command csi-kubelet-sim-admission runs the API server's mutating
// admission webhooks for csi-kubelet-sim, which starts it when its input
// holds MutatingWebhookConfigurations and talks to it over standard input
// and output (admission/remote). The API server's webhook code costs
// about 11 ms of package initialisation at every start; living here, it
// is paid only by the runs that use webhooks.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission"
)

func main() {
	verbose := flag.Int("v", 0, "csi-kubelet-sim's verbosity: from 3 on, the webhook plugin's own log goes to stderr")
	flag.Parse()
	if *verbose < 3 {
		// The plugin logs each failed call to klog; the report says it.
		klog.SetOutput(io.Discard)
		klog.LogToStderr(false)
	}
	// The simulator handles Ctrl-C and ends the helper itself: the helper
	// ignores the terminal's signal, so that it is not gone before the
	// simulator's teardown is done with it.
	signal.Ignore(syscall.SIGINT)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := admission.Serve(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "csi-kubelet-sim-admission:", err)
		os.Exit(1)
	}
}
