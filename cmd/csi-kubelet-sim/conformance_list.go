package main

import (
	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// completeFocus completes --focus and --skip with the scenario names, as
// regexps that select exactly one.
func completeFocus(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, sc := range session.AllScenarios() {
		out = append(out, session.FocusOne(sc.Name)+"\t"+sc.Checks)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
