package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

// The text trace and summary print every measured duration one way, three
// significant digits (2.20ms, 20.2ms, 9.94s), not 9.93582s beside 20.23ms
// (issue 32).
func TestDurationsOneFormat(t *testing.T) {
	sock := csifake.ServeTest(t, stagingDriver())
	root := filepath.Join(t.TempDir(), "root")
	out, stderr, code := cli(t, "", "run", "-f", "../../fixtures/samples/staged/staged.yaml", "--endpoint", sock, "--root-dir", root, "--node-name", "n1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	sig3 := regexp.MustCompile(`^(0\.\d{3}ms|[1-9]\.\d\d(ms|s)|[1-9]\d\.\d(ms|s)|[1-9]\d{2,}(ms|s))$`)
	calls := regexp.MustCompile(`calls +\d+ to the driver, \d+ failed, (\S+) in the driver, (\S+) in all`).FindStringSubmatch(out)
	if calls == nil {
		t.Fatalf("no calls line in the summary:\n%s", out)
	}
	durations := calls[1:]
	// The trace's time column: the field ending in ms or s before the detail.
	call := regexp.MustCompile(`^ +\d+ \S+ +\S+ +\S+ +OK +(\S+)  `)
	for _, line := range strings.Split(out, "\n") {
		if m := call.FindStringSubmatch(line); m != nil {
			durations = append(durations, m[1])
		}
	}
	if len(durations) < 5 {
		t.Fatalf("too few durations found (%q) in:\n%s", durations, out)
	}
	for _, d := range durations {
		if !sig3.MatchString(d) {
			t.Errorf("duration %q is not printed with three significant digits:\n%s", d, out)
		}
	}
}
