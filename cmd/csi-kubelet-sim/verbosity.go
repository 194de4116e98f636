package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Verbosity is the same flag in every command and at every place of the
// command line: -v (repeatable, -vv), --verbose, and klog's --v=N, which
// the kubelet and every CSI sidecar take, so that a CI script can pass the
// same flag to all of them. `csi-kubelet-sim -v plan pod.yaml` is a
// verbose plan: -v never means --version.

const verbosityUsage = "more detail (-vv more; klog's --v=N is the same)"

// addVerbosityFlags gives the root -v/--verbose and --v as persistent
// flags, so that they are understood before the command's name, and gives
// every command with its own --verbose a --v that sets the same count.
// A command's own --verbose shadows the root's, and cobra parses the flags
// before the command's name with the command's flags, so they reach it.
func addVerbosityFlags(root *cobra.Command) {
	var ignored int
	pf := root.PersistentFlags()
	pf.CountVarP(&ignored, "verbose", "v", verbosityUsage)
	pf.AddFlag(levelFlag(pf.Lookup("verbose").Value))
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		if f := c.Flags().Lookup("verbose"); f != nil && c != root && c.Flags().Lookup("v") == nil {
			c.Flags().AddFlag(levelFlag(f.Value))
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
}

// levelFlag is klog's --v: a level that must be given (--v=4 or --v 4),
// setting the count of a --verbose flag.
func levelFlag(count pflag.Value) *pflag.Flag {
	return &pflag.Flag{
		Name:     "v",
		Usage:    "verbosity level, as klog's --v (the same as -v repeated N times)",
		Value:    &levelValue{count: count},
		DefValue: "0",
		Hidden:   true,
	}
}

// levelValue sets a count flag from a level.
type levelValue struct{ count pflag.Value }

func (l *levelValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a level, 0 or more (as klog's --v=4)")
	}
	return l.count.Set(strconv.Itoa(n))
}

func (l *levelValue) String() string { return l.count.String() }
func (l *levelValue) Type() string   { return "Level" }
