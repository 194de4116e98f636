package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// command is the one shape of every subcommand, kubectl's: its options
// register their flags (the shared ones through the flag groups of
// flags.go), complete what the flags and arguments leave open (files from
// the arguments, the release parsed, the endpoint and root dir made
// usable), validate what needs no I/O, and run: read the input and do the
// work. Usage errors exit 2 before anything is touched.
type command interface {
	complete(args []string) error
	validate() error
	run(ctx context.Context) error
}

// newCommandFor gives c the flags of o (registered by addFlags) and a
// RunE that completes, validates and runs it.
func newCommandFor[T command](addFlags func(T, *pflag.FlagSet), o T, c *cobra.Command) *cobra.Command {
	c.RunE = func(c *cobra.Command, args []string) error {
		if err := o.complete(args); err != nil {
			return err
		}
		if err := o.validate(); err != nil {
			return err
		}
		return o.run(c.Context())
	}
	addFlags(o, c.Flags())
	return c
}
