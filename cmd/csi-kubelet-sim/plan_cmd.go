package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

const planLong = `Print the requests a kubelet would send a CSI driver for the pods of the
manifests, with no driver at all: the driver's answers come from the flags
(--driver-name, --node-capabilities, --controller-capabilities, --node-id,
--topology). It runs the same kubelet code as run, so the paths,
volume_context, secrets and tokens are the ones run would send; a claim with
a StorageClass and no PV is provisioned and attached as run does it.

Manifests come from -f and from the arguments; without a Pod the default pod
is used, and the trace says so: its persistent volume is provisioned when
--controller-capabilities has CREATE_DELETE_VOLUME (the default), as run does
against a driver that offers it.`

const planExample = `  # what a staging driver would get for these manifests
  csi-kubelet-sim plan -f manifests/ --node-capabilities STAGE_UNSTAGE_VOLUME,SINGLE_NODE_MULTI_WRITER

  # a driver without a CSIDriver object in the manifests, as the kubelet of 1.31
  csi-kubelet-sim plan -f pod.yaml --driver-name my.csi.example.com --kubelet-version 1.31`

func newPlanCommand(s session.Streams) *cobra.Command {
	o := &session.PlanOptions{Streams: s}
	c := newCommandFor(func(_ sessionCommand, fs *pflag.FlagSet) { addPlanFlags(o, fs) }, sessionCommand{o, &o.CommonOptions, s}, &cobra.Command{
		Use:     "plan [-f FILE]... [--node-capabilities CAP,...] [flags] [FILE...]",
		Short:   "Print the requests a kubelet would send, with no driver needed",
		Long:    planLong,
		Example: planExample,
	})
	markFilenameFlag(c)
	return c
}
