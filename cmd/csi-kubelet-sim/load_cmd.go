package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

const loadLong = `Run a node's worth of pods against the driver with the kubelet's
concurrency: every input pod plus --replicas copies, created at --qps/--burst
or all at once, their volumes mounted side by side with one pending operation
per volume, each pod syncing and reporting stats on its own period, then torn
down (with --duration and --churn, pods keep coming and going). The report
gives per CSI method the calls, errors by code, latency percentiles, calls per
second and the most in flight, and the simulator's own CPU and memory; -o json
for CI, --report FILE.html for one offline page.

Manifests come from -f and from the arguments.`

const loadExample = `  # 110 pods at once on one node, with an HTML report
  csi-kubelet-sim load -f manifests/ --endpoint /run/csi/csi.sock --replicas 109 --report load.html

  # 10 minutes of churn: 2 pods a second, each living 30s
  csi-kubelet-sim load pod.yaml --endpoint /run/csi/csi.sock --duration 10m --churn 2 --churn-lifetime 30s -o json`

func newLoadCommand(s session.Streams) *cobra.Command {
	o := &session.LoadOptions{Streams: s}
	c := newCommandFor(func(_ sessionCommand, fs *pflag.FlagSet) { addLoadFlags(o, fs) }, sessionCommand{o, &o.CommonOptions, s}, &cobra.Command{
		Use:     "load [-f FILE]... --endpoint unix:///PATH [--replicas N] [flags] [FILE...]",
		Short:   "A node's worth of pods with the kubelet's concurrency; latency per CSI method",
		Long:    loadLong,
		Example: loadExample,
	})
	markFilenameFlag(c)
	return c
}
