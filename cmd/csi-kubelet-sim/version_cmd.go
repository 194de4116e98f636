package main

import (
	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/buildinfo"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/printers"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

const versionExample = `  csi-kubelet-sim version
  csi-kubelet-sim version -o json | jq -r .kubelet_releases[]`

func newVersionCommand(s session.Streams) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, its build and the kubelet releases it simulates",
		Long: `Print the simulator's version, the commit and Go version it was built from,
and the kubelet releases --kubelet-version accepts.`,
		Example: versionExample,
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			return printers.Version(s.Out, output, buildinfo.ReadVersionInfo())
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return c
}
