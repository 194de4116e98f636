package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/buildinfo"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/docs"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/printers"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

const rootLong = `csi-kubelet-sim shows a CSI driver exactly what a kubelet sends it, without a cluster.

It reads the objects a cluster would hold (a CSIDriver, Pods, PersistentVolumes,
claims, Secrets) and does for the pods' CSI volumes what a kubelet does, call by
call, against the driver's socket; every rule it follows is in docs/kubelet.md.

Exit codes: 0 success; 1 the driver failed a call or a check; 2 bad usage or input
(nothing usable given included); 3 environment (socket missing or unreachable,
root dir unusable, no answer at registration); 130 interrupted. A driver that does
not answer an operation within --timeout failed it: 1.

Ctrl-C, SIGTERM, SIGHUP (a closed terminal or SSH session) or SIGQUIT (after
its goroutine dump on stderr) ends a command and tears its volumes down (exit
130); a second one, a second or more after the first, abandons the teardown
(then run cleanup). The copies of one signal sent to the whole process group
(a terminal, timeout, CI) count once.`

const rootExample = `  # the kubelet's calls for your pod, against your driver
  csi-kubelet-sim run -f pod.yaml -f csidriver.yaml --endpoint unix:///run/csi/csi.sock

  # your driver checked against what a kubelet needs of it
  csi-kubelet-sim conformance --endpoint unix:///run/csi/csi.sock -f csidriver.yaml

  # a command's description, flags and examples
  csi-kubelet-sim help run`

// newRootCommand builds the command tree. Every subcommand has a
// constructor newXCommand(streams) in its own file, returning a cobra
// command whose RunE fills an options struct (flags and positional
// arguments), validates it and runs it; errors carry their exit code
// (withCode) and are printed by run, once, on one line.
func newRootCommand(s session.Streams) *cobra.Command {
	var showVersion bool
	root := &cobra.Command{
		Use:     "csi-kubelet-sim COMMAND",
		Short:   "Shows a CSI driver exactly what a kubelet sends it, without a cluster",
		Long:    rootLong,
		Example: rootExample,
		// No cobra Version: its version flag takes -v, which every
		// subcommand uses for verbose, and it reads the build info on
		// every start. --version is ours, and -v is verbose everywhere.
		// Errors are printed by run on one line, with their exit code;
		// the usage is for --help, not for every mistake.
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          unknownCommand,
		RunE: func(c *cobra.Command, _ []string) error {
			if showVersion {
				return printers.ShortVersion(s.Out)
			}
			fmt.Fprint(s.Err, c.UsageString())
			return session.WithCode(session.ExitUsage, errors.New("a command is needed"))
		},
	}
	root.Flags().BoolVar(&showVersion, "version", false, "print the version and exit (`version` says more)")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return session.WithCode(session.ExitUsage, err) })
	root.AddCommand(
		newRunCommand(s),
		newPlanCommand(s),
		newConformanceCommand(s),
		newLoadCommand(s),
		newValidateCommand(s),
		newCleanupCommand(s),
		newTokensCommand(s),
		newVersionCommand(s),
	)
	root.InitDefaultCompletionCmd()
	addVerbosityFlags(root)
	completeFlagValues(root, buildinfo.KubeletReleases())
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			completionUsage(c, s)
		}
	}
	return root
}

// completionUsage makes cobra's `completion` refuse a missing or unknown
// shell with exit 2, as every other command does, instead of printing its
// help and exiting 0.
func completionUsage(c *cobra.Command, s session.Streams) {
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		const shells = "bash, zsh, fish or powershell"
		if len(args) > 0 {
			return session.WithCode(session.ExitUsage, fmt.Errorf("completion: unknown shell %q: want %s", args[0], shells))
		}
		fmt.Fprint(s.Err, c.UsageString())
		return session.WithCode(session.ExitUsage, fmt.Errorf("completion: a shell is needed: %s", shells))
	}
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, s session.Streams) int {
	printed := &printedWatch{out: s.Out}
	out := newOutputSwitch(printed)
	s.Out = out
	root := newRootCommand(s)
	structuredOutput(root, out)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !printed.printed() {
		// Refused before it ran (a flag cobra could not parse): the
		// record -o asked for all the same.
		printFailureRecord(printed, cmd, args, err)
	}
	return report(err, s.Err)
}

// report prints a failed command's one-line error and returns its code.
func report(err error, w io.Writer) int {
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return session.ExitOK
	}
	code := session.ExitCode(err)
	var ee *session.ExitError
	if !errors.As(err, &ee) && isCobraUsageError(err) {
		code = session.ExitUsage
	}
	// One line, whatever the error quotes (a driver's message, a file's
	// bytes): control characters are escaped; then the docs citations
	// gain their addresses. The input's problems are the one exception: a
	// pre-flight lists them one a line (each made one line when read).
	// A driver's message in it is cut to a few KiB (csiclient.MaxLine in
	// all), its end kept: the hint the simulator adds comes last.
	msg := csiclient.CutKeepEnd(err.Error(), csiclient.MaxLine, 1<<10)
	text := csiclient.Printable(msg)
	var problems manifests.Problems
	if errors.As(err, &problems) {
		text = csiclient.PrintableLines(msg)
	}
	fmt.Fprintf(w, "csi-kubelet-sim: %s\n", docs.WithLinks(text, buildinfo.DocsRef()))
	return code
}

// isCobraUsageError recognises the errors cobra makes itself before a
// command runs and that no FlagErrorFunc or Args of ours words (a required
// flag missing, an unknown subcommand): usage errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "required flag") || strings.HasPrefix(msg, "unknown command")
}

// unknownCommand refuses a command name that is not one, with cobra's
// suggestions.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if sug := c.SuggestionsFor(args[0]); len(sug) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(sug, " or "))
	}
	return session.WithCode(session.ExitUsage, fmt.Errorf("%s; 'csi-kubelet-sim --help' lists the commands", msg))
}

// noArgs is the Args of commands that take no files and no operands: a
// stray argument (a file the shell expanded, a mistyped flag) is refused,
// never silently dropped.
func noArgs(c *cobra.Command, args []string) error {
	return session.NoArgsError(c.CommandPath(), args)
}

// completeFlagValues lets shells complete the values of the flags that
// take one of a few, in every command that has them.
func completeFlagValues(c *cobra.Command, releases []string) {
	values := map[string][]string{
		"output":          outputValues,
		"kubelet-version": releases,
	}
	for flag, vs := range values {
		if c.Flags().Lookup(flag) != nil {
			_ = c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(vs, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	for _, sub := range c.Commands() {
		completeFlagValues(sub, releases)
	}
}

// markFilenameFlag makes shells complete -f with manifests and
// directories.
func markFilenameFlag(c *cobra.Command) {
	_ = c.MarkFlagFilename("filename", "yaml", "yml", "json")
}
