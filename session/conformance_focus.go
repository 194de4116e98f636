package session

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// allScenarios are the scenarios conformance knows, in the order it runs
// them; which apply to a driver depends on its capabilities and CSIDriver,
// the names do not.
func AllScenarios() []conformance.Scenario {
	return conformance.Derive(&conformance.DriverInfo{}, nil, conformance.Host{})
}

// focusOne is the --focus that selects exactly one scenario.
func FocusOne(name string) string { return "^" + regexp.QuoteMeta(name) + "$" }

// RerunHint is the command line that runs one scenario again: the same
// endpoint, files and every flag that decides what the scenarios send and
// to whom (a rerun without --read-only, --apiserver or the --node-name the
// driver was started with fails for another reason), --focus on its name.
// Defaults (the host's node name, the default timeout and driver wait) are
// left out.
func (o *ConformanceOptions) RerunHint(name string) string {
	args := []string{"csi-kubelet-sim", "conformance", "--endpoint", shellQuote(o.Endpoint)}
	add := func(flag string, values ...string) {
		for _, v := range values {
			args = append(args, flag, shellQuote(v))
		}
	}
	set := func(flag string, on bool) {
		if on {
			args = append(args, flag)
		}
	}
	opt := func(flag, v string) {
		if v != "" {
			add(flag, v)
		}
	}
	add("-f", o.Filenames...)
	set("-R", o.Recursive)
	opt("--testdriver", o.TestDriver)
	opt("--volume-handle", o.VolumeHandle)
	add("--volume-attributes", volumeAttributeArgs(o.VolumeAttributes)...)
	set("--read-only", o.ReadOnly)
	if host, err := os.Hostname(); err != nil || o.NodeName != host {
		opt("--node-name", o.NodeName)
	}
	opt("--kubelet-version", o.KubeletVersion)
	opt("--feature-gates", o.FeatureGates)
	if o.Timeout > 0 && o.Timeout != node.DefaultTimeout {
		add("--timeout", o.Timeout.String())
	}
	if a := o.Apiserver; a.Enabled {
		args = append(args, "--apiserver")
		opt("--driver-kubeconfig", a.DriverKubeconfig)
		opt("--driver-service-account", a.DriverServiceAccount)
		if a.DriverWait > 0 && a.DriverWait != time.Minute {
			add("--driver-wait", a.DriverWait.String())
		}
	}
	add("--webhook-service", o.Admission.WebhookServices...)
	opt("--as", o.Admission.As)
	add("--as-group", o.Admission.AsGroups...)
	set("--webhook-dry-run", o.Admission.WebhookDryRun)
	return strings.Join(append(args, "--focus", shellQuote(FocusOne(name)), "-v"), " ")
}

// volumeAttributeArgs are the --volume-attributes values giving attrs, one
// pair each, by key. The flag splits a value on commas only when it holds
// more than one "=" (then as a CSV record), so such a pair is quoted as a
// CSV field.
func volumeAttributeArgs(attrs map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		kv := k + "=" + attrs[k]
		if strings.Count(kv, "=") > 1 {
			kv = `"` + strings.ReplaceAll(kv, `"`, `""`) + `"`
		}
		out = append(out, kv)
	}
	return out
}

// shellQuote quotes a word for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
