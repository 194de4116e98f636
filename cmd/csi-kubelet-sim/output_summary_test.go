package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// lastRecord is the last JSON record of -o json output.
func lastRecord(t *testing.T, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatalf("last line of stdout is no JSON record: %v\n%s", err, stdout)
	}
	return rec
}

// -o json ends with a summary record whatever the exit code: a command
// that fails on its input (2) or its environment (3) before it printed
// one gets the record that says so, for a CI parser (issue 32).
func TestJSONSummaryOnEveryExit(t *testing.T) {
	dir := t.TempDir()
	pod := writeTestFile(t, dir, "pod.yaml", inlinePodYAML)
	bad := writeTestFile(t, dir, "bad.yaml", badCSIDriver)
	root := filepath.Join(dir, "root")
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"bad input", []string{"run", "-f", bad, "--endpoint", filepath.Join(dir, "none.sock"), "--root-dir", root}, session.ExitUsage, "fsGroupPolicy"},
		{"no socket", []string{"run", "-f", pod, "--endpoint", filepath.Join(dir, "none.sock"), "--root-dir", root}, session.ExitEnvironment, "none.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := cli(t, "", append(tc.args, "-o", "json")...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			rec := lastRecord(t, stdout)
			if rec["kind"] != "summary" || rec["result"] != "FAILED" || rec["exit_code"] != float64(tc.code) ||
				!strings.Contains(rec["error"].(string), tc.err) || rec["schemaVersion"] != 1.0 {
				t.Errorf("last record %v, want a FAILED summary with exit_code %d and the error", rec, tc.code)
			}
			if n := strings.Count(stdout, `"kind":"summary"`); n != 1 {
				t.Errorf("%d summary records, want 1:\n%s", n, stdout)
			}
			// The other formats render the same record.
			out, _, _ := cli(t, "", append(tc.args, "-o", "yaml")...)
			var y map[string]any
			if err := yaml.Unmarshal([]byte(out), &y); err != nil || y["exit_code"] != float64(tc.code) {
				t.Errorf("-o yaml: %v\n%s", err, out)
			}
			out, _, _ = cli(t, "", append(tc.args, "-o", "jsonpath={.exit_code}")...)
			if strings.TrimSpace(out) != string(rune('0'+tc.code)) {
				t.Errorf("-o jsonpath={.exit_code}: %q", out)
			}
		})
	}
}

// -o jsonpath skips the records that lack the template's fields instead
// of printing a blank line for each: `run -o jsonpath={.method}{"\n"}`
// lists the calls, one a line, and nothing else (issue 32).
func TestJSONPathSkipsRecordsWithoutTheField(t *testing.T) {
	sock := csifake.ServeTest(t, stagingDriver())
	root := filepath.Join(t.TempDir(), "root")
	args := []string{"run", "-f", "../../fixtures/samples/staged/staged.yaml", "--endpoint", sock, "--root-dir", root, "--node-name", "n1", "-v"}
	jsonOut, _, code := cli(t, "", append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("-o json: exit %d", code)
	}
	var calls []string
	for _, line := range strings.Split(strings.TrimSpace(jsonOut), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["kind"] == "call" {
			calls = append(calls, rec["method"].(string))
		}
	}
	if len(calls) == 0 || !strings.Contains(jsonOut, `"kind":"step"`) {
		t.Fatalf("want calls and the steps without a method (-v) in the stream:\n%s", jsonOut)
	}
	out, _, code := cli(t, "", append(args, "-o", `jsonpath={.method}{"\n"}`)...)
	if want := strings.Join(calls, "\n") + "\n"; code != 0 || out != want {
		t.Errorf("-o jsonpath={.method}: exit %d\n%q\nwant\n%q", code, out, want)
	}
}

// A command refused before it ran (a flag cobra cannot parse: exit 2)
// prints the failure record too, in the format -o asks for.
func TestJSONSummaryOnFlagError(t *testing.T) {
	for _, args := range [][]string{
		{"run", "-o", "json", "--bogus"},
		{"run", "--bogus", "--output=json"},
		{"validate", "-ojson", "--hold", "1s"},
	} {
		stdout, stderr, code := cli(t, "", args...)
		if code != session.ExitUsage {
			t.Fatalf("%v: exit %d, want 2\n%s", args, code, stderr)
		}
		rec := lastRecord(t, stdout)
		if rec["kind"] != "summary" || rec["exit_code"] != float64(session.ExitUsage) || !strings.Contains(rec["error"].(string), "unknown flag") {
			t.Errorf("%v: last record %v, want a summary with exit_code 2 and the flag error", args, rec)
		}
	}
	out, _, _ := cli(t, "", "run", "--bogus", "-o", "yaml")
	var y map[string]any
	if err := yaml.Unmarshal([]byte(out), &y); err != nil || y["exit_code"] != float64(session.ExitUsage) {
		t.Errorf("-o yaml: %v\n%s", err, out)
	}
	// Text output stays empty on stdout.
	if out, _, _ := cli(t, "", "run", "--bogus"); out != "" {
		t.Errorf("text: stdout %q", out)
	}
}
