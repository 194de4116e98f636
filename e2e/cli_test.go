package e2e

// The command line as a newcomer meets it (issue 11): every file named is
// judged, help and completion on stdout, version from the build, no false
// green, and a JUnit report of a run.

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `validate a.yaml b.yaml` (what the shell makes of `validate -f *.yaml`)
// judges b too: its errors make the exit code (issue 11, item 1).
func TestCLIValidateEveryFile(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	good := writeFile(t, work, "a.yaml", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: good.example.com}\nspec: {}\n")
	bad := writeFile(t, work, "b.yaml", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: bad.example.com}\nspec: {fsGroupPolicy: Sometimes, volumeLifecycleModes: [Forever]}\n")
	for _, args := range [][]string{{"validate", "-f", good, bad}, {"validate", good, bad}} {
		r := runSim(t, args...)
		wantCode(t, r, 2)
		oneLineError(t, r, "invalid field(s)")
		if !strings.Contains(r.Stdout, "ERROR    "+bad+": document 1: line 4: CSIDriver bad.example.com: spec.fsGroupPolicy") ||
			!strings.Contains(r.Stdout, "INFO     "+good+": document 1: line 1: CSIDriver good.example.com: valid") {
			t.Errorf("both files should be judged\n%s", r)
		}
	}
	// A command that reads no files refuses them.
	r := runSim(t, "version", good)
	wantCode(t, r, 2)
	oneLineError(t, r, "version: unexpected arguments ["+good+"]")
}

// Help is on stdout with a description and examples; completion scripts
// come from cobra (issue 11, item 5).
func TestCLIHelpAndCompletion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help", "run"}, {"run", "--help"}} {
		r := runSim(t, args...)
		wantCode(t, r, 0)
		if r.Stderr != "" || !strings.HasPrefix(r.Stdout, "Run the kubelet's node lifecycle") || !strings.Contains(r.Stdout, "Examples:\n") ||
			!strings.Contains(r.Stdout, "--endpoint string") {
			t.Errorf("help on stdout with description, examples and flags\n%s", r)
		}
	}
	for shell, want := range map[string]string{"bash": "__start_csi-kubelet-sim", "zsh": "#compdef csi-kubelet-sim", "fish": "complete -c csi-kubelet-sim", "powershell": "Register-ArgumentCompleter"} {
		r := runSim(t, "completion", shell)
		wantCode(t, r, 0)
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("completion %s lacks %q", shell, want)
		}
	}
}

// `version -o json` carries the build and the releases simulated; the
// Makefile's -X main.version is the version when given.
func TestCLIVersionJSON(t *testing.T) {
	t.Parallel()
	r := runSim(t, "version", "-o", "json")
	wantCode(t, r, 0)
	var v struct {
		Version  string   `json:"version"`
		Module   string   `json:"module"`
		Go       string   `json:"go_version"`
		Releases []string `json:"kubelet_releases"`
		Default  string   `json:"kubelet_default"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if v.Version == "" || v.Module != "github.com/csi-kubelet-sim/csi-kubelet-sim" || !strings.HasPrefix(v.Go, "go") ||
		strings.Join(v.Releases, " ") != "1.30 1.31 1.32 1.33 1.34 1.35 1.36 1.37 1.38" || v.Default != "1.37" {
		t.Errorf("version %+v", v)
	}
}

// An empty file, or only kinds the kubelet does not read, is nothing
// usable: exit 2, not a quiet run of the default pod (issue 11, item 3).
func TestCLINothingUsable(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	empty := writeFile(t, work, "empty.yaml", "")
	dir := filepath.Join(work, "other")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	for _, in := range []string{empty, dir} {
		r := runSim(t, "run", "-f", in, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
		wantCode(t, r, 2)
		if !strings.Contains(r.Stderr, "csi-kubelet-sim: nothing usable in "+in) || r.Stdout != "" {
			t.Errorf("%s\n%s", in, r)
		}
	}
}

// --focus that selects no scenario exits 2 instead of passing 0 checks.
func TestCLIConformanceFocusNoMatch(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	r := runSim(t, "conformance", "--endpoint", "unix://"+drv.Sock, "--focus", "nomatch")
	wantCode(t, r, 2)
	oneLineError(t, r, `--focus "nomatch"`, "select none of the", "registration/node-info")
	if r.Stdout != "" {
		t.Errorf("nothing should run\n%s", r)
	}
}

// run --junit: one test case per volume operation, parsable, with the
// run's result; the default pod is announced.
func TestCLIRunJUnit(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	junit := filepath.Join(work, "run.xml")
	csiDriver := writeFile(t, work, "csidriver.yaml", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: "+refDriverName+"}\nspec: {attachRequired: false}\n")
	r := runSim(t, "run", csiDriver, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"--volume-stats-agg-period", "0", "--junit", junit, "--volume-handle", "sim-volume-1") // the PV of the case names below, not a provisioned one
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)
	if !strings.HasPrefix(r.Stdout, "no Pod in the input: using the default pod default/csi-kubelet-sim") {
		t.Errorf("the default pod should be announced\n%s", r)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suite struct {
			Name     string `xml:"name,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	var names []string
	for _, c := range doc.Suite.Cases {
		names = append(names, c.Name)
	}
	want := []string{"GetDriverName", "RegisterPlugin",
		"MountDevice sim-pv (default/csi-kubelet-sim)", "SetUp sim-pv (default/csi-kubelet-sim)",
		"TearDown sim-pv (default/csi-kubelet-sim)", "UnmountDevice sim-pv", "result"}
	if doc.Suite.Name != "csi-kubelet-sim run" || doc.Suite.Failures != 0 || strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("junit suite %q, %d failures, cases %q; want %q\n%s", doc.Suite.Name, doc.Suite.Failures, names, want, data)
	}
}

// TestTextTraceLines: the text trace a person reads has its column header
// on a line of its own, above the first call, and no line break escaped
// into the text (the escaping of driver text must not reach the
// simulator's own layout).
func TestTextTraceLines(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	r := runSim(t, "run", "-f", sample(t, "inline"), "--endpoint", "unix://"+drv.Sock,
		"--root-dir", filepath.Join(work, "root"), "--node-name", simNode)
	wantCode(t, r, 0)
	if strings.Contains(r.Stdout, `\x0a`) {
		t.Errorf("a line break escaped in the text trace:\n%s", r.Stdout)
	}
	lines := strings.Split(r.Stdout, "\n")
	header := -1
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "#" && f[1] == "component" {
			header = i
			break
		}
	}
	if header < 0 || header+1 >= len(lines) || !strings.Contains(lines[header+1], "GetPluginInfo") {
		t.Errorf("no header line directly above the first call (GetPluginInfo):\n%s", r.Stdout)
	}
}
