package session

import (
	"regexp"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
)

// allScenarios are the scenarios conformance knows, in the order it runs
// them; which apply to a driver depends on its capabilities and CSIDriver,
// the names do not.
func AllScenarios() []conformance.Scenario {
	return conformance.Derive(&conformance.DriverInfo{}, nil, conformance.Host{})
}

// focusOne is the --focus that selects exactly one scenario.
func FocusOne(name string) string { return "^" + regexp.QuoteMeta(name) + "$" }

// rerunHint is the command line that runs one scenario again: the same
// endpoint and files, --focus on its name.
func (o *ConformanceOptions) RerunHint(name string) string {
	args := []string{"csi-kubelet-sim", "conformance", "--endpoint", shellQuote(o.Endpoint)}
	for _, f := range o.Filenames {
		args = append(args, "-f", shellQuote(f))
	}
	if o.KubeletVersion != "" {
		args = append(args, "--kubelet-version", o.KubeletVersion)
	}
	return strings.Join(append(args, "--focus", shellQuote(FocusOne(name)), "-v"), " ")
}

// shellQuote quotes a word for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
