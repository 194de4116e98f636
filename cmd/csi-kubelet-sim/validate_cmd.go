package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/printers"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/validate"
)

const validateLong = `Judge the manifests as the API server of the release would: CSIDriver objects
defaulted and validated (field paths and messages as the API server gives
them, and its warnings), the driver names of PersistentVolumes and inline
volumes, and whether an inline volume's driver allows Ephemeral. With
--endpoint, the CSIDriver objects are also compared with the live driver.
With --apiserver, a real kube-apiserver (the helper csi-kubelet-sim-apiserver)
judges every object too, with a server-side dry run, and its verdict is
printed beside validate's ("API server: ...").

Every file is judged: -f, and the arguments (so validate -f *.yaml checks all
the shell finds). An input with nothing to judge exits 2.`

const validateExample = `  # every manifest of a directory tree
  csi-kubelet-sim validate -R -f deploy/

  # and what the real API server says of each object (CRDs first)
  csi-kubelet-sim validate -f deploy/ --apiserver

  # the objects, and the driver they are for
  csi-kubelet-sim validate csidriver.yaml pod.yaml --endpoint unix:///run/csi/csi.sock`

func newValidateCommand(s session.Streams) *cobra.Command {
	o := validateCommand{&validate.ValidateOptions{Streams: s}}
	c := newCommandFor(func(o validateCommand, fs *pflag.FlagSet) { addValidateFlags(o.ValidateOptions, fs) }, o, &cobra.Command{
		Use:     "validate [-f FILE]... [--endpoint unix:///PATH] [flags] [FILE...]",
		Short:   "Judge CSIDriver objects and CSI volumes as the API server would, and against the live driver",
		Long:    validateLong,
		Example: validateExample,
	})
	markFilenameFlag(c)
	return c
}

// validateCommand runs validate with the command's printer of its
// findings.
type validateCommand struct{ *validate.ValidateOptions }

func (c validateCommand) Run(ctx context.Context) error {
	c.Printer = printers.NewFindings(c.Out, c.Output == "json")
	return c.ValidateOptions.Run(ctx)
}
