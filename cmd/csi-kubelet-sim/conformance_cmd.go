package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/printers"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

const conformanceLong = `Check a CSI driver against what a kubelet needs of it. From the driver's
CSIDriver object (-f, or the arguments), or without one from the driver's own
capabilities, it derives the scenarios that matter for that driver and runs
each through the simulated kubelet against the live driver: every lifecycle
mode the object allows, pod info, tokens, republish, the SELinux mount option,
volume_mount_group, attach and publish_context, and the node-side rules the
kubelet relies on (idempotent calls, NodeUnpublishVolume removing the target,
InvalidArgument for missing fields, topology, timing). A failure says what the
driver did, what the kubelet needed and the docs/kubelet.md section.

--focus and --skip (regular expressions on the scenario names) that leave no
scenario exit 2.

With --apiserver one real kube-apiserver (on etcd) runs for the whole run: the
input is created through its API, each scenario's pod, volume and claim too
(read back with the server's UIDs, deleted after the scenario, with what the
driver made for the pod), tokens come from its TokenRequest API, and the
driver's API requests are in each scenario's notes. The scenarios then run
one at a time.`

const conformanceExample = `  # every scenario the CSIDriver object calls for
  csi-kubelet-sim conformance --endpoint unix:///run/csi/csi.sock -f csidriver.yaml

  # only the token scenarios, verbose, with a JUnit report for CI
  csi-kubelet-sim conformance --endpoint /run/csi/csi.sock csidriver.yaml --focus '^tokens/' -v --junit conformance.xml

  # from the driver's Kubernetes storage test definition (e2e.test -storage.testdriver)
  csi-kubelet-sim conformance --endpoint /run/csi/csi.sock -f csidriver.yaml --testdriver test-driver.yaml

  # a driver that, like the secrets-store CSI driver, needs read-only inline volumes
  csi-kubelet-sim conformance --endpoint /run/csi/csi.sock -f csidriver.yaml --read-only --volume-attributes secretProviderClass=db

  # with a real API server; start the driver with KUBECONFIG=/tmp/driver.kubeconfig
  csi-kubelet-sim conformance --apiserver --endpoint /run/csi/csi.sock -f deploy/ --driver-kubeconfig /tmp/driver.kubeconfig`

func newConformanceCommand(s session.Streams) *cobra.Command {
	o := conformanceCommand{&session.ConformanceOptions{Streams: s}}
	c := newCommandFor(func(o conformanceCommand, fs *pflag.FlagSet) { addConformanceFlags(o.ConformanceOptions, fs) }, o, &cobra.Command{
		Use:     "conformance --endpoint unix:///PATH [-f CSIDRIVER] [flags] [FILE...]",
		Short:   "Check the driver against what a kubelet needs of it",
		Long:    conformanceLong,
		Example: conformanceExample,
	})
	markFilenameFlag(c)
	_ = c.RegisterFlagCompletionFunc("focus", completeFocus)
	_ = c.RegisterFlagCompletionFunc("skip", completeFocus)
	return c
}

// conformanceCommand runs the engine's conformance with the command's
// printer as its observer.
type conformanceCommand struct{ *session.ConformanceOptions }

func (c conformanceCommand) Run(ctx context.Context) error {
	if c.List {
		return printers.ScenarioList(c.Out, c.Output)
	}
	c.Observer = printers.NewConformance(c.Out, c.Err, c.Output == "json", c.Verbose)
	return c.ConformanceOptions.Run(ctx)
}
