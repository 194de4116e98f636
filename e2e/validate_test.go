package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The `validate` command, end to end: the built binary's findings for
// CSIDriver objects (docs/kubelet.md §14.2 defaults, §14.3 validation, the
// strategy's warning), the driver names of PVs and inline volumes
// (ValidateCSIDriverName, the kubelet's lifecycle-mode check), bad input, and
// with --endpoint the objects against a live driver.
//
// Messages are the API server's, copied from k8s.io/kubernetes v1.37.1
// (pkg/apis/storage/validation/validation.go, pkg/apis/core/validation,
// pkg/registry/storage/csidriver/strategy.go, pkg/volume/csi/csi_mounter.go)
// as apimachinery v0.37.2's field errors word them.

const (
	// validation.IsDNS1123Subdomain's regex message (apimachinery
	// RegexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, "example.com")).
	dns1123SubdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`

	// strategy.go warningServiceAccountTokenInSecretsRecommended.
	tokensInSecretsWarning = "spec.serviceAccountTokenInSecrets is unset; if supported by this CSI driver, set to true to prevent possible logging of tokens in volume attributes"

	// The info line of a valid CSIDriver whose spec is empty: every
	// default of docs/kubelet.md §14.2 (seLinuxMount defaulted: the
	// SELinuxMountReadWriteOncePod gate is on in 1.30..1.37).
	defaultedSummary = "valid; after defaulting: attachRequired=true podInfoOnMount=false volumeLifecycleModes=[Persistent] fsGroupPolicy=ReadWriteOnceWithFSType requiresRepublish=false seLinuxMount=false storageCapacity=false tokenRequests=0"
)

// vFinding is one line of `validate -o json`.
type vFinding struct {
	Source   string `json:"source"`
	Object   string `json:"object"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Line     int    `json:"line"` // the file's line; absent (0) for the live driver's findings
}

// textLine is how a finding reads in the text output: the severity in
// capitals padded to 8 columns, then source (and line), object and
// message; a problem of no object has none.
func (f vFinding) textLine() string {
	src := f.Source
	if f.Line > 0 {
		src += fmt.Sprintf(": line %d", f.Line)
	}
	if f.Object == "" {
		return fmt.Sprintf("%-8s %s: %s", strings.ToUpper(f.Severity), src, f.Message)
	}
	return fmt.Sprintf("%-8s %s: %s: %s", strings.ToUpper(f.Severity), src, f.Object, f.Message)
}

// wantFinding is an expected finding: Message exactly, or, for the
// simulator's own wording around a quoted message, every part of Contains.
type wantFinding struct {
	Source, Object, Severity string
	Message                  string
	Contains                 []string
}

func (w wantFinding) matches(f vFinding) bool {
	if f.Source != w.Source || f.Object != w.Object || f.Severity != w.Severity {
		return false
	}
	if w.Contains == nil {
		return f.Message == w.Message
	}
	for _, c := range w.Contains {
		if !strings.Contains(f.Message, c) {
			return false
		}
	}
	return true
}

func (w wantFinding) String() string {
	if w.Contains == nil {
		return vFinding{Source: w.Source, Object: w.Object, Severity: w.Severity, Message: w.Message}.textLine()
	}
	return fmt.Sprintf("%-8s %s: %s: <containing %q>", strings.ToUpper(w.Severity), w.Source, w.Object, w.Contains)
}

// csiDriverNamed is a CSIDriver manifest; spec is YAML indented by two
// spaces (or "" for an empty spec).
func csiDriverNamed(name, spec string) string {
	if spec == "" {
		spec = "spec: {}\n"
	} else {
		spec = "spec:\n" + spec
	}
	return "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: " + name + "\n" + spec
}

// csiPVDoc is a PersistentVolume of a CSI driver.
func csiPVDoc(name, driver string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  csi:
    driver: %q
    volumeHandle: handle-%s
`, name, driver, name)
}

// inlinePodDoc is a pod in namespace ns with an emptyDir volume first,
// then one inline CSI volume per driver (so they are spec.volumes[1..]).
func inlinePodDoc(name string, drivers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: ns\nspec:\n  containers: [{name: c, image: busybox}]\n  volumes:\n  - name: scratch\n    emptyDir: {}\n", name)
	for i, d := range drivers {
		fmt.Fprintf(&b, "  - name: inline-%d\n    csi: {driver: %q}\n", i, d)
	}
	return b.String()
}

// validateRun is one `validate` command run twice: -o text and -o json.
type validateRun struct {
	Text, JSON simResult
	Findings   []vFinding
}

// runValidateBoth runs `validate args...` with -o text and -o json and
// checks what holds for every run: the same exit code; stdout of -o json
// is one JSON object per line with exactly the keys source, object,
// severity and message, and line (a number) for a finding about a line of
// a file; the text output is those findings, one line
// each in the same order; stderr is empty on success and one line on
// failure.
func runValidateBoth(t *testing.T, args ...string) validateRun {
	t.Helper()
	text := runSim(t, append(append([]string{"validate"}, args...), "-o", "text")...)
	js := runSim(t, append(append([]string{"validate"}, args...), "-o", "json")...)
	if text.Code != js.Code {
		t.Fatalf("exit code %d with -o text, %d with -o json\n%s\n%s", text.Code, js.Code, text, js)
	}
	var fs []vFinding
	sc := bufio.NewScanner(strings.NewReader(js.Stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("-o json: line is not a JSON object (%v): %q\n%s", err, line, js)
		}
		keys := make([]string, 0, len(m))
		for k, v := range m {
			if k == "schemaVersion" {
				if v != 1.0 {
					t.Errorf("-o json: schemaVersion %v, want 1: %q", v, line)
				}
				continue
			}
			if k == "line" {
				if n, ok := v.(float64); !ok || n < 1 {
					t.Errorf("-o json: line is %v, want a line number: %q", v, line)
				}
				continue
			}
			keys = append(keys, k)
			if _, ok := v.(string); !ok {
				t.Errorf("-o json: %s is %T, want a string: %q", k, v, line)
			}
		}
		sort.Strings(keys)
		if want := []string{"message", "object", "severity", "source"}; !reflect.DeepEqual(keys, want) {
			t.Errorf("-o json: keys %v, want %v: %q", keys, want, line)
		}
		var f vFinding
		_ = json.Unmarshal([]byte(line), &f)
		fs = append(fs, f)
	}
	var textLines []string
	if text.Stdout != "" {
		if !strings.HasSuffix(text.Stdout, "\n") {
			t.Errorf("text output does not end in a newline: %q", text.Stdout)
		}
		textLines = strings.Split(strings.TrimSuffix(text.Stdout, "\n"), "\n")
	}
	var want []string
	for _, f := range fs {
		want = append(want, f.textLine())
	}
	if !reflect.DeepEqual(textLines, want) {
		t.Errorf("text output is not the JSON findings, line for line:\n got %q\nwant %q", textLines, want)
	}
	for _, r := range []simResult{text, js} {
		if r.Code == 0 {
			if r.Stderr != "" {
				t.Errorf("stderr not empty on success: %q", r.Stderr)
			}
		} else {
			oneLineError(t, r)
		}
	}
	return validateRun{Text: text, JSON: js, Findings: fs}
}

// checkFindings compares findings object by object (source and object),
// in order within each: every finding of an object must be wanted, in
// the order given.
func checkFindings(t *testing.T, r validateRun, want []wantFinding) {
	t.Helper()
	type key struct{ src, obj string }
	var gotKeys, wantKeys []key
	got := map[key][]vFinding{}
	for _, f := range r.Findings {
		k := key{f.Source, f.Object}
		if _, ok := got[k]; !ok {
			gotKeys = append(gotKeys, k)
		}
		got[k] = append(got[k], f)
	}
	wants := map[key][]wantFinding{}
	for _, w := range want {
		k := key{w.Source, w.Object}
		if _, ok := wants[k]; !ok {
			wantKeys = append(wantKeys, k)
		}
		wants[k] = append(wants[k], w)
	}
	ok := len(gotKeys) == len(wantKeys)
	for _, k := range wantKeys {
		g, w := got[k], wants[k]
		if len(g) != len(w) {
			ok = false
			continue
		}
		for i := range w {
			if !w[i].matches(g[i]) {
				ok = false
			}
		}
	}
	if !ok {
		var ws []string
		for _, w := range want {
			ws = append(ws, w.String())
		}
		t.Errorf("findings differ\n--- got:\n%s\n--- want:\n%s", r.Text.Stdout, strings.Join(ws, "\n"))
	}
}

// countSeverity counts the findings of a severity.
func countSeverity(fs []vFinding, sev string) int {
	n := 0
	for _, f := range fs {
		if f.Severity == sev {
			n++
		}
	}
	return n
}

// TestValidateValid: a CSIDriver the API server accepts gives exit 0 and
// one info line with the spec after the defaults of docs/kubelet.md §14.2,
// exactly as printed; and -o json the same finding as one JSON line.
func TestValidateValid(t *testing.T) {
	t.Run("output", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		f := writeFile(t, work, "csidriver.yaml", csiDriverNamed(refDriverName, ""))

		text := runSim(t, "validate", "-f", f)
		wantCode(t, text, 0)
		if want := "INFO     " + f + ": document 1: line 1: CSIDriver " + refDriverName + ": " + defaultedSummary + "\n"; text.Stdout != want {
			t.Errorf("text output:\n got %q\nwant %q", text.Stdout, want)
		}
		if text.Stderr != "" {
			t.Errorf("stderr: %q", text.Stderr)
		}

		js := runSim(t, "validate", "-f", f, "-o", "json")
		wantCode(t, js, 0)
		lines := strings.Split(strings.TrimSuffix(js.Stdout, "\n"), "\n")
		if len(lines) != 1 {
			t.Fatalf("-o json: want one line, got %d\n%s", len(lines), js)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
			t.Fatalf("-o json: %v: %q", err, lines[0])
		}
		want := map[string]any{
			"source":        f + ": document 1",
			"object":        "CSIDriver " + refDriverName,
			"severity":      "info",
			"message":       defaultedSummary,
			"line":          1.0, // the object's first line
			"schemaVersion": 1.0,
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("-o json:\n got %v\nwant %v", got, want)
		}
	})

	// Valid specs: the boundaries of 14.3 and values other than the
	// defaults, each with the info line it gets.
	cases := validateValidCases()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := tc.csiName
			if name == "" {
				name = "valid.example.com"
			}
			work := workDir(t)
			f := writeFile(t, work, "csidriver.yaml", csiDriverNamed(name, tc.spec))
			r := runValidateBoth(t, "-f", f)
			wantCode(t, r.JSON, 0)
			checkFindings(t, r, []wantFinding{{Source: f + ": document 1", Object: "CSIDriver " + name, Severity: "info", Message: tc.summary}})
		})
	}
}

// TestValidateRules: each rule of docs/kubelet.md §14.3 that can still fail
// after defaulting, broken alone: exit 2 (a manifest the API server
// refuses is bad input, README exit codes), one ERROR line naming the file
// and document, the object, the field path and the API server's message,
// and no "valid" line.
func TestValidateRules(t *testing.T) {
	const name = "rules.example.com"
	cases := validateRuleCases()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := tc.csiName
			if n == "" && !tc.nameless {
				n = name
			}
			doc := csiDriverNamed(n, tc.spec)
			if tc.nameless {
				doc = strings.Replace(doc, "metadata:\n  name: \n", "metadata: {}\n", 1)
			}
			work := workDir(t)
			f := writeFile(t, work, "csidriver.yaml", doc)
			r := runValidateBoth(t, "-f", f)
			wantCode(t, r.JSON, 2)
			var want []wantFinding
			for _, m := range tc.want {
				want = append(want, wantFinding{Source: f + ": document 1", Object: "CSIDriver " + n, Severity: "error", Message: m})
			}
			checkFindings(t, r, want)
			oneLineError(t, r.Text, fmt.Sprintf("%d invalid", len(tc.want)))
		})
	}

	// A refused object in the second document of a file is named by its
	// document; the valid one in the first still gets its info line.
	t.Run("second-document", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		f := writeFile(t, work, "two.yaml", csiDriverNamed("first.example.com", "")+"---\n"+csiDriverNamed("second.example.com", "  nodeAllocatableUpdatePeriodSeconds: 0\n"))
		r := runValidateBoth(t, "-f", f)
		wantCode(t, r.JSON, 2)
		checkFindings(t, r, []wantFinding{
			{Source: f + ": document 1", Object: "CSIDriver first.example.com", Severity: "info", Message: defaultedSummary},
			{Source: f + ": document 2", Object: "CSIDriver second.example.com", Severity: "error", Message: "spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 0: must be greater than or equal to 10 seconds"},
		})
	})
}

// TestValidateTokensWarning: WarningsOnCreate warns when tokenRequests are
// set and serviceAccountTokenInSecrets is unset, only where the
// CSIServiceAccountTokenSecrets gate is on (docs/kubelet.md §19.1: beta on
// in 1.35, GA in 1.36 and 1.37; the field does not exist in 1.34). A warning
// does not fail the run.
func TestValidateTokensWarning(t *testing.T) {
	const name = "tokens.example.com"
	unset := "  tokenRequests: [{audience: vault}]\n"
	cases := []struct {
		name, spec string
		args       []string
		warn       bool
	}{
		{"1.35", unset, []string{"--kubelet-version", "1.35"}, true},
		{"1.36", unset, []string{"--kubelet-version", "1.36"}, true},
		{"1.37", unset, []string{"--kubelet-version", "1.37"}, true},
		{"default-version", unset, nil, true},
		{"1.34", unset, []string{"--kubelet-version", "1.34"}, false},
		{"1.35-gate-off", unset, []string{"--kubelet-version", "1.35", "--feature-gates", "CSIServiceAccountTokenSecrets=false"}, false},
		{"1.37-set-false", unset + "  serviceAccountTokenInSecrets: false\n", []string{"--kubelet-version", "1.37"}, false},
		{"1.37-set-true", unset + "  serviceAccountTokenInSecrets: true\n", []string{"--kubelet-version", "1.37"}, false},
		{"1.37-no-tokenRequests", "  podInfoOnMount: false\n", []string{"--kubelet-version", "1.37"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			f := writeFile(t, work, "csidriver.yaml", csiDriverNamed(name, tc.spec))
			r := runValidateBoth(t, append([]string{"-f", f}, tc.args...)...)
			wantCode(t, r.JSON, 0)
			src, obj := f+": document 1", "CSIDriver "+name
			var want []wantFinding
			if tc.warn {
				want = append(want, wantFinding{Source: src, Object: obj, Severity: "warning", Message: tokensInSecretsWarning})
			}
			// The info line: tokenRequests counted as given.
			want = append(want, wantFinding{Source: src, Object: obj, Severity: "info", Contains: []string{"valid; after defaulting: "}})
			checkFindings(t, r, want)
			if tc.warn {
				if wantLine := "WARNING  " + src + ": line 1: " + obj + ": " + tokensInSecretsWarning + "\n"; !strings.HasPrefix(r.Text.Stdout, wantLine) {
					t.Errorf("text output should start with\n%q\ngot\n%q", wantLine, r.Text.Stdout)
				}
			}
		})
	}
}

// TestValidateDriverNames: the csi.driver of PVs and inline volumes,
// checked as ValidateCSIDriverName does (docs/kubelet.md §14.3: at most 63
// characters, a DNS-1123 subdomain after lower-casing), and the kubelet's
// lifecycle-mode check for inline volumes (csi_mounter.go
// supportsVolumeLifecycleMode: no CSIDriver means persistent volumes only).
func TestValidateDriverNames(t *testing.T) {
	drivers := csiDriverNamed(refDriverName, "") + "---\n" + csiDriverNamed(ephDriver, "  volumeLifecycleModes: [Persistent, Ephemeral]\n")
	ephSummary := strings.Replace(defaultedSummary, "volumeLifecycleModes=[Persistent]", "volumeLifecycleModes=[Persistent Ephemeral]", 1)
	cases := validateDriverNameCases()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			f := writeFile(t, work, "objects.yaml", drivers+"---\n"+tc.doc)
			r := runValidateBoth(t, "-f", f)
			wantCode(t, r.JSON, tc.code)
			want := []wantFinding{
				{Source: f + ": document 1", Object: "CSIDriver " + refDriverName, Severity: "info", Message: defaultedSummary},
				{Source: f + ": document 2", Object: "CSIDriver " + ephDriver, Severity: "info", Message: ephSummary},
			}
			for _, w := range tc.want {
				want = append(want, wantFinding{Source: f + ": document 3", Object: tc.object, Severity: w.sev, Message: w.msg, Contains: w.contains})
			}
			checkFindings(t, r, want)
		})
	}
}

// TestValidateBadInput: manifests that cannot be read are findings like
// the others (the pre-flight shows every problem at once): an error at the
// file, document and line, exit 2, and one line on stderr (docs/calls.md, Inputs:
// unknown fields are errors named by their path, file and document).
func TestValidateBadInput(t *testing.T) {
	cases := []struct {
		name    string
		content string // "" means: the file does not exist
		doc     string // the finding's source after the file name
		line    int
		want    string
	}{
		{name: "missing-file", want: "no such file or directory"},
		{
			name:    "unknown-field",
			content: csiDriverNamed("a.example.com", "  attachRequird: true\n"),
			doc:     ": document 1", line: 6,
			want: `unknown field "spec.attachRequird" (did you mean "spec.attachRequired"?)`,
		},
		{
			name:    "unknown-field-second-document",
			content: csiDriverNamed("a.example.com", "") + "---\n" + csiDriverNamed("b.example.com", "  tokenRequests: [{audience: a, expiration: 600}]\n"),
			doc:     ": document 2", line: 12,
			want: `unknown field "spec.tokenRequests[0].expiration" (did you mean "spec.tokenRequests[0].expirationSeconds"?)`,
		},
		{
			name:    "bad-yaml",
			content: "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: a.example.com\nspec: [\n",
			doc:     ": document 1", line: 6,
			want: "yaml: ",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			f := filepath.Join(work, "csidriver.yaml")
			if tc.content != "" {
				writeFile(t, work, "csidriver.yaml", tc.content)
			}
			r := runValidateBoth(t, "-f", f)
			wantCode(t, r.JSON, 2)
			found := false
			for _, fd := range r.Findings {
				if fd.Severity == "error" && fd.Source == f+tc.doc && fd.Line == tc.line && strings.Contains(fd.Message, tc.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no error finding at %s%s line %d with %q:\n%s", f, tc.doc, tc.line, tc.want, r.Text.Stdout)
			}
		})
	}
}

// TestValidateEndpoint: with --endpoint the objects are compared with the
// live driver. The reference driver registers as ref.csi.kubelet-sim.io
// (vendor version 0.1.0) and has a controller service without
// PUBLISH_UNPUBLISH_VOLUME (fixtures/refdriver identity.go, controller.go);
// the mock driver, attach not disabled, has it. A CSIDriver named otherwise
// is not that driver's object (docs/kubelet.md §13: a mismatch just means "no
// CSIDriver"): a mismatch, exit 1. Invalid objects outrank mismatches: exit 2.
func TestValidateEndpoint(t *testing.T) {
	const (
		attachWarning   = "attachRequired is true but the driver has no ControllerPublishVolume"
		attachMismatch  = "attachRequired is false but the driver has PUBLISH_UNPUBLISH_VOLUME"
		mountGroupInfo  = "the driver has VOLUME_MOUNT_GROUP"
		noAttachSummary = "valid; after defaulting: attachRequired=false podInfoOnMount=false volumeLifecycleModes=[Persistent] fsGroupPolicy=ReadWriteOnceWithFSType requiresRepublish=false seLinuxMount=false storageCapacity=false tokenRequests=0"
	)
	applies := func(name, version string) []string {
		return []string{fmt.Sprintf("the driver registers as %q (vendor version %s): this CSIDriver applies to it", name, version)}
	}
	notFound := func(name string) []string {
		return []string{fmt.Sprintf("the driver registers as %q but no CSIDriver has that name", name)}
	}
	type liveWant struct {
		obj, sev string
		contains []string
	}
	cases := []struct {
		name     string
		mock     bool
		drvArgs  []string
		csiName  string
		spec     string
		fileWant []wantFinding // Source and Object filled in: the file's CSIDriver
		live     []liveWant
		code     int
	}{
		{
			name: "matching-name", csiName: refDriverName,
			fileWant: []wantFinding{{Severity: "info", Message: defaultedSummary}},
			live: []liveWant{
				{"CSIDriver " + refDriverName, "warning", []string{attachWarning}},
				{"CSIDriver " + refDriverName, "info", applies(refDriverName, "0.1.0")},
			},
		},
		{
			name: "matching-name-no-attach", csiName: refDriverName, spec: "  attachRequired: false\n",
			fileWant: []wantFinding{{Severity: "info", Message: noAttachSummary}},
			live:     []liveWant{{"CSIDriver " + refDriverName, "info", applies(refDriverName, "0.1.0")}},
		},
		{
			name: "driver-named-otherwise", drvArgs: []string{"--driver-name", "custom.example.com", "--vendor-version", "9.9.9"},
			csiName: "custom.example.com", spec: "  attachRequired: false\n",
			fileWant: []wantFinding{{Severity: "info", Message: noAttachSummary}},
			live:     []liveWant{{"CSIDriver custom.example.com", "info", applies("custom.example.com", "9.9.9")}},
		},
		{
			name: "wrong-name", csiName: "other.example.com", code: 1,
			fileWant: []wantFinding{{Severity: "info", Message: defaultedSummary}},
			live:     []liveWant{{"driver " + refDriverName, "mismatch", notFound(refDriverName)}},
		},
		{
			// docs/kubelet.md §21.10: volume_mount_group is sent whatever
			// fsGroupPolicy says.
			name: "volume-mount-group", drvArgs: []string{"--volume-mount-group"}, csiName: refDriverName, spec: "  attachRequired: false\n",
			fileWant: []wantFinding{{Severity: "info", Message: noAttachSummary}},
			live: []liveWant{
				{"CSIDriver " + refDriverName, "info", []string{mountGroupInfo, "ReadWriteOnceWithFSType"}},
				{"CSIDriver " + refDriverName, "info", applies(refDriverName, "0.1.0")},
			},
		},
		{
			name: "volume-mount-group-file-policy", drvArgs: []string{"--volume-mount-group"}, csiName: refDriverName, spec: "  attachRequired: false\n  fsGroupPolicy: File\n",
			fileWant: []wantFinding{{Severity: "info", Message: strings.Replace(noAttachSummary, "fsGroupPolicy=ReadWriteOnceWithFSType", "fsGroupPolicy=File", 1)}},
			live:     []liveWant{{"CSIDriver " + refDriverName, "info", applies(refDriverName, "0.1.0")}},
		},
		{
			name: "invalid-and-wrong-name", csiName: "other.example.com", spec: "  fsGroupPolicy: Bad\n", code: 2,
			fileWant: []wantFinding{{Severity: "error", Message: `spec.fsGroupPolicy: Unsupported value: "Bad": supported values: "File", "None", "ReadWriteOnceWithFSType"`}},
			live:     []liveWant{{"driver " + refDriverName, "mismatch", notFound(refDriverName)}},
		},
		{
			name: "mock-attach-not-required", mock: true, csiName: mockDriver, spec: "  attachRequired: false\n", code: 1,
			fileWant: []wantFinding{{Severity: "info", Message: noAttachSummary}},
			live: []liveWant{
				{"CSIDriver " + mockDriver, "mismatch", []string{attachMismatch}},
				{"CSIDriver " + mockDriver, "info", []string{fmt.Sprintf("the driver registers as %q", mockDriver), "this CSIDriver applies to it"}},
			},
		},
		{
			name: "mock-attach-required", mock: true, csiName: mockDriver,
			fileWant: []wantFinding{{Severity: "info", Message: defaultedSummary}},
			live:     []liveWant{{"CSIDriver " + mockDriver, "info", []string{fmt.Sprintf("the driver registers as %q", mockDriver), "this CSIDriver applies to it"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			var drv *driverProc
			if tc.mock {
				drv = startMock(t, work, tc.drvArgs...)
			} else {
				drv = startRefDriver(t, work, tc.drvArgs...)
			}
			f := writeFile(t, work, "csidriver.yaml", csiDriverNamed(tc.csiName, tc.spec))
			r := runValidateBoth(t, "-f", f, "--endpoint", "unix://"+drv.Sock)
			wantCode(t, r.JSON, tc.code)
			var want []wantFinding
			for _, w := range tc.fileWant {
				w.Source, w.Object = f+": document 1", "CSIDriver "+tc.csiName
				want = append(want, w)
			}
			for _, l := range tc.live {
				want = append(want, wantFinding{Source: "driver " + drv.Sock, Object: l.obj, Severity: l.sev, Contains: l.contains})
			}
			checkFindings(t, r, want)
			if n := countSeverity(r.Findings, "mismatch"); tc.code == 1 {
				oneLineError(t, r.Text, fmt.Sprintf("%d mismatch", n))
			}
		})
	}

	// README exit codes: 3, the environment: the socket is missing.
	t.Run("socket-missing", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		f := writeFile(t, work, "csidriver.yaml", csiDriverNamed(refDriverName, ""))
		sock := filepath.Join(work, "none.sock")
		r := runSim(t, "validate", "-f", f, "--endpoint", "unix://"+sock)
		wantCode(t, r, 3)
		if !strings.Contains(r.Stdout, "CSIDriver "+refDriverName+": valid") {
			t.Errorf("the object's findings are not printed when the driver cannot be reached:\n%s", r)
		}
		if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], sock) {
			t.Errorf("want one error line naming %s:\n%s", sock, r.Stderr)
		}
	})

	// An invalid object with the driver unreachable: the findings, and the
	// input's exit code 2 (the comparison skipped, with a warning).
	t.Run("socket-missing-invalid-object", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		f := writeFile(t, work, "csidriver.yaml", csiDriverNamed(refDriverName, "  fsGroupPolicy: Bogus\n"))
		sock := filepath.Join(work, "none.sock")
		r := runSim(t, "validate", "-f", f, "--endpoint", "unix://"+sock)
		wantCode(t, r, 2)
		if !strings.Contains(r.Stdout, `spec.fsGroupPolicy: Unsupported value: "Bogus"`) {
			t.Errorf("the invalid field is not reported:\n%s", r)
		}
		if !strings.Contains(r.Stderr, "not compared with the driver") {
			t.Errorf("no warning that the driver was not compared:\n%s", r)
		}
	})
}

// validCase is a valid spec of TestValidateValid.
type validCase struct{ name, csiName, spec, summary string }

// validateValidCases are TestValidateValid's valid specs (also judged by
// the API server in TestValidateAgreesWithAPIServer).
func validateValidCases() []validCase {
	return []validCase{
		{
			name: "every-field-set",
			spec: "  attachRequired: false\n  podInfoOnMount: true\n  volumeLifecycleModes: [Persistent, Ephemeral]\n  fsGroupPolicy: File\n" +
				"  requiresRepublish: true\n  seLinuxMount: true\n  storageCapacity: true\n" +
				"  tokenRequests: [{audience: a}, {audience: \"\"}]\n  serviceAccountTokenInSecrets: true\n  nodeAllocatableUpdatePeriodSeconds: 60\n",
			summary: "valid; after defaulting: attachRequired=false podInfoOnMount=true volumeLifecycleModes=[Persistent Ephemeral] fsGroupPolicy=File requiresRepublish=true seLinuxMount=true storageCapacity=true tokenRequests=2",
		},
		{
			// 14.2: volumeLifecycleModes defaults to [Persistent] when empty.
			name:    "empty-lifecycle-modes",
			spec:    "  volumeLifecycleModes: []\n  fsGroupPolicy: None\n",
			summary: strings.Replace(defaultedSummary, "fsGroupPolicy=ReadWriteOnceWithFSType", "fsGroupPolicy=None", 1),
		},
		{
			// 14.3: expirationSeconds >= 600 and <= 2^32, both bounds included;
			// nodeAllocatableUpdatePeriodSeconds >= 10.
			name:    "bounds",
			spec:    "  tokenRequests: [{audience: a, expirationSeconds: 600}, {audience: b, expirationSeconds: 4294967296}]\n  serviceAccountTokenInSecrets: false\n  nodeAllocatableUpdatePeriodSeconds: 10\n",
			summary: strings.Replace(defaultedSummary, "tokenRequests=0", "tokenRequests=2", 1),
		},
		{
			// 14.3 Name: at most 253 characters.
			name:    "name-253",
			csiName: strings.Repeat("a", 249) + ".com",
			summary: defaultedSummary,
		},
	}
}

// ruleCase is a case of TestValidateRules.
type ruleCase struct {
	name     string
	csiName  string // default: rules.example.com
	spec     string
	nameless bool
	want     []string // the messages, in the API server's order
}

// validateRuleCases are TestValidateRules' cases (also judged by the API
// server in TestValidateAgreesWithAPIServer).
func validateRuleCases() []ruleCase {
	longName := strings.Repeat("a", 250) + ".com" // 254 characters, all valid
	return []ruleCase{
		{
			name: "fsGroupPolicy",
			spec: "  fsGroupPolicy: Bad\n",
			// NotSupported with supportedFSGroupPolicy.List(), sorted.
			want: []string{`spec.fsGroupPolicy: Unsupported value: "Bad": supported values: "File", "None", "ReadWriteOnceWithFSType"`},
		},
		{
			// An explicit "" is not nil: SetDefaults_CSIDriver leaves it.
			name: "fsGroupPolicy-empty",
			spec: "  fsGroupPolicy: \"\"\n",
			want: []string{`spec.fsGroupPolicy: Unsupported value: "": supported values: "File", "None", "ReadWriteOnceWithFSType"`},
		},
		{
			// The list's path, not the entry's.
			name: "volumeLifecycleModes",
			spec: "  volumeLifecycleModes: [Persistent, Foo]\n",
			want: []string{`spec.volumeLifecycleModes: Unsupported value: "Foo": supported values: "Persistent", "Ephemeral"`},
		},
		{
			// validateTokenRequests `continue`s after a duplicate: the
			// duplicate's expirationSeconds (10) is not checked.
			name: "duplicate-audience",
			spec: "  tokenRequests: [{audience: a, expirationSeconds: 3600}, {audience: a, expirationSeconds: 10}]\n  serviceAccountTokenInSecrets: true\n",
			want: []string{`spec.tokenRequests[1].audience: Duplicate value: "a"`},
		},
		{
			// "At most one empty audience" is the same uniqueness rule.
			name: "duplicate-empty-audience",
			spec: "  tokenRequests: [{audience: \"\"}, {audience: x}, {}]\n  serviceAccountTokenInSecrets: true\n",
			want: []string{`spec.tokenRequests[2].audience: Duplicate value: ""`},
		},
		{
			name: "expiration-below-600",
			spec: "  tokenRequests: [{audience: a}, {audience: b, expirationSeconds: 599}]\n  serviceAccountTokenInSecrets: true\n",
			want: []string{"spec.tokenRequests[1].expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"},
		},
		{
			name: "expiration-above-2^32",
			spec: "  tokenRequests: [{audience: a, expirationSeconds: 4294967297}]\n  serviceAccountTokenInSecrets: true\n",
			want: []string{"spec.tokenRequests[0].expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"},
		},
		{
			name: "nodeAllocatableUpdatePeriodSeconds",
			spec: "  nodeAllocatableUpdatePeriodSeconds: 9\n",
			want: []string{"spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 9: must be greater than or equal to 10 seconds"},
		},
		{
			name: "tokens-in-secrets-without-tokenRequests",
			spec: "  serviceAccountTokenInSecrets: true\n",
			want: []string{"spec.serviceAccountTokenInSecrets: Invalid value: true: serviceAccountTokenInSecrets is set but no tokenRequests are specified"},
		},
		{
			// Non-nil is enough, false too.
			name: "tokens-in-secrets-false-without-tokenRequests",
			spec: "  serviceAccountTokenInSecrets: false\n  tokenRequests: []\n",
			want: []string{"spec.serviceAccountTokenInSecrets: Invalid value: false: serviceAccountTokenInSecrets is set but no tokenRequests are specified"},
		},
		{
			name:    "name-not-a-subdomain",
			csiName: "Bad_Name",
			want:    []string{`metadata.name: Invalid value: "Bad_Name": ` + dns1123SubdomainMsg},
		},
		{
			name:    "name-too-long",
			csiName: longName,
			want:    []string{`metadata.name: Invalid value: "` + longName + `": must be no more than 253 characters`},
		},
		{
			name:     "name-missing",
			nameless: true,
			want:     []string{"metadata.name: Required value: name or generateName is required"},
		},
		{
			// Several at once, in validateCSIDriverSpec's order (ObjectMeta
			// first, then fsGroupPolicy, tokenRequests, volumeLifecycleModes,
			// nodeAllocatableUpdatePeriodSeconds).
			name:    "all-in-order",
			csiName: "Bad_Name",
			spec: "  nodeAllocatableUpdatePeriodSeconds: 5\n  volumeLifecycleModes: [Foo]\n" +
				"  tokenRequests: [{audience: a, expirationSeconds: 1}, {audience: a}]\n  serviceAccountTokenInSecrets: true\n  fsGroupPolicy: Bad\n",
			want: []string{
				`metadata.name: Invalid value: "Bad_Name": ` + dns1123SubdomainMsg,
				`spec.fsGroupPolicy: Unsupported value: "Bad": supported values: "File", "None", "ReadWriteOnceWithFSType"`,
				"spec.tokenRequests[0].expirationSeconds: Invalid value: 1: may not specify a duration less than 10 minutes",
				`spec.tokenRequests[1].audience: Duplicate value: "a"`,
				`spec.volumeLifecycleModes: Unsupported value: "Foo": supported values: "Persistent", "Ephemeral"`,
				"spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 5: must be greater than or equal to 10 seconds",
			},
		},
	}
}

// driverNameWant is a finding expected of a driver-name case's object.
type driverNameWant struct {
	sev, msg string
	contains []string
}

// driverNameCase is a case of TestValidateDriverNames.
type driverNameCase struct {
	name   string
	doc    string // the third document, after the two CSIDrivers (ref and ephDriver)
	object string
	want   []driverNameWant
	code   int
}

// ephDriver is the CSIDriver of the driver-name cases that allows Ephemeral.
const ephDriver = "eph.example.com"

// validateDriverNameCases are TestValidateDriverNames' cases (also judged
// by the API server in TestValidateAgreesWithAPIServer).
func validateDriverNameCases() []driverNameCase {
	long64 := strings.Repeat("a", 61) + ".io"
	long63 := strings.Repeat("a", 60) + ".io"
	noCSIDriver := func(d string) []string { return []string{fmt.Sprintf("no CSIDriver named %q", d)} }

	return []driverNameCase{
		{"pv-known-driver", csiPVDoc("pv-ok", refDriverName), "PersistentVolume pv-ok", nil, 0},
		{
			name: "pv-not-a-subdomain", doc: csiPVDoc("pv-bad", "bad_driver"), object: "PersistentVolume pv-bad", code: 2,
			want: []driverNameWant{
				{sev: "error", msg: `spec.csi.driver: Invalid value: "bad_driver": ` + dns1123SubdomainMsg},
				{sev: "warning", contains: noCSIDriver("bad_driver")},
			},
		},
		{
			// Upper case passes (checked lower-cased) but matches no
			// CSIDriver object.
			name: "pv-upper-case", doc: csiPVDoc("pv-upper", "Ref.CSI.Kubelet-Sim.IO"), object: "PersistentVolume pv-upper", code: 0,
			want: []driverNameWant{{sev: "warning", contains: noCSIDriver("Ref.CSI.Kubelet-Sim.IO")}},
		},
		{
			name: "pv-64-characters", doc: csiPVDoc("pv-long", long64), object: "PersistentVolume pv-long", code: 2,
			want: []driverNameWant{
				{sev: "error", msg: "spec.csi.driver: Too long: may not be more than 63 bytes"},
				{sev: "warning", contains: noCSIDriver(long64)},
			},
		},
		{
			name: "pv-63-characters", doc: csiPVDoc("pv-63", long63), object: "PersistentVolume pv-63", code: 0,
			want: []driverNameWant{{sev: "warning", contains: noCSIDriver(long63)}},
		},
		{"inline-ephemeral-allowed", inlinePodDoc("p-ok", ephDriver), "Pod ns/p-ok", nil, 0},
		{
			name: "inline-persistent-only", doc: inlinePodDoc("p-pers", refDriverName), object: "Pod ns/p-pers", code: 2,
			want: []driverNameWant{{sev: "error", msg: `spec.volumes[1].csi.driver: volume mode "Ephemeral" not supported by driver ` + refDriverName + ` (only supports ["Persistent"])`}},
		},
		{
			name: "inline-no-csidriver", doc: inlinePodDoc("p-none", ephDriver, "other.example.com"), object: "Pod ns/p-none", code: 2,
			want: []driverNameWant{{sev: "error", contains: []string{"spec.volumes[2].csi.driver: ", `volume mode "Ephemeral" not supported by driver other.example.com (no CSIDriver object)`}}},
		},
		{
			name: "inline-not-a-subdomain", doc: inlinePodDoc("p-bad", "Bad_Driver"), object: "Pod ns/p-bad", code: 2,
			want: []driverNameWant{
				{sev: "error", msg: `spec.volumes[1].csi.driver: Invalid value: "Bad_Driver": ` + dns1123SubdomainMsg},
				{sev: "error", contains: []string{"spec.volumes[1].csi.driver: ", `volume mode "Ephemeral" not supported by driver Bad_Driver (no CSIDriver object)`}},
			},
		},
	}
}
