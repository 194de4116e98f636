package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/printers"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// command is the one shape of every subcommand, kubectl's: flags ->
// options -> engine -> printers. Its options (the engine's: session,
// validate, tokencmd) get their flags here (flagsets.go), complete what
// the flags and arguments leave open (files from the arguments, the
// release parsed, the endpoint and root dir made usable), validate what
// needs no I/O, and run: read the input and do the work, printing through
// the printer the command gives them. Usage errors exit 2 before anything
// is touched.
type command interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// newCommandFor gives c the flags of o (registered by addFlags) and a
// RunE that completes, validates and runs it.
func newCommandFor[T command](addFlags func(T, *pflag.FlagSet), o T, c *cobra.Command) *cobra.Command {
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(c.Context())
	}
	addFlags(o, c.Flags())
	return c
}

// sessionCommand is a command that runs a session of the kubelet (run,
// plan, load, cleanup): the engine prints through the command's printer,
// made once the flags are parsed.
type sessionCommand struct {
	command
	common *session.CommonOptions
	s      session.Streams
}

func (c sessionCommand) Run(ctx context.Context) error {
	c.common.Printer = printers.NewSession(c.s.Out, c.s.Err, c.common.Output == "json", c.common.Verbose)
	c.common.Admission.Printer = printers.NewAdmission(c.s.Out, c.common.Output == "json", c.common.Verbose)
	return c.command.Run(ctx)
}
