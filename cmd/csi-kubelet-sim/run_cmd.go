package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

const runLong = `Run the kubelet's node lifecycle for the pods of the manifests against a CSI
driver's socket, and print every call: the node-driver-registrar's and the
kubelet's registration, the capability queries, NodeStageVolume and
NodePublishVolume with the kubelet's paths and volume_context, the running
pod (--hold: pod syncs, republish, volume stats), then NodeUnpublishVolume and
NodeUnstageVolume and the kubelet's clean-up. Nothing is left behind.

Manifests come from -f and from the arguments (files, directories, - for
stdin), or with --kubeconfig and --pod from a running cluster: the pod and
what its volumes reference, read-only. Without a Pod, a default pod with one volume per lifecycle mode the
CSIDriver allows is used, and the trace says so; its persistent volume is
provisioned (a claim of a StorageClass of the driver) when the driver's
controller offers CREATE_DELETE_VOLUME, else a PV with the handle
sim-volume-1 (--volume-handle: one of the driver's own). An input with nothing the
kubelet reads, or pods with no CSI volume of the driver, exits 2.

A claim with a StorageClass of the driver and no PV is provisioned first, as
the external-provisioner and external-attacher do (CreateVolume, the PV,
ControllerPublishVolume), and detached and deleted after the pods
(docs/kubelet.md §22, §23).`

const runExample = `  # your pod and its driver's objects, against your driver
  csi-kubelet-sim run -f manifests/ --endpoint unix:///run/csi/csi.sock

  # every file the shell finds, JSON lines for CI and a JUnit report
  csi-kubelet-sim run -f *.yaml --endpoint /run/csi/csi.sock -o json --junit run.xml

  # keep the pod running 5 minutes with a republish every 10s
  csi-kubelet-sim run -f pod.yaml --endpoint /run/csi/csi.sock --hold 5m --republish-period 10s

  # a StorageClass and a claim, no PV: the volume is created, attached, and deleted afterwards
  csi-kubelet-sim run -f fixtures/samples/provision --endpoint /run/csi/csi.sock -v

  # a pod of a running cluster (read-only) replayed against your local driver
  csi-kubelet-sim run --kubeconfig ~/.kube/config --pod shop/checkout --endpoint /run/csi/csi.sock

  # the kubelet of 1.33 on an SELinux node
  csi-kubelet-sim run -f pod.yaml --endpoint /run/csi/csi.sock --kubelet-version 1.33 --selinux`

func newRunCommand(s session.Streams) *cobra.Command {
	o := &session.RunOptions{Streams: s}
	c := newCommandFor(func(_ sessionCommand, fs *pflag.FlagSet) { addRunFlags(o, fs) }, sessionCommand{o, &o.CommonOptions, s}, &cobra.Command{
		Use:     "run [-f FILE]... --endpoint unix:///PATH [flags] [FILE...]",
		Short:   "Run the kubelet's node lifecycle for the pods against a driver, and print every call",
		Long:    runLong,
		Example: runExample,
	})
	markFilenameFlag(c)
	return c
}
