package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// validate --apiserver, and the differential check of validate it makes
// possible: every input of validate's own tests (TestValidateValid,
// TestValidateRules, TestValidateTokensWarning, TestValidateDriverNames,
// TestValidateBadInput, the pre-flight's planted problems, the samples) is
// judged by the built binary and, in the same run, by a real kube-apiserver
// (the helper csi-kubelet-sim-apiserver, server-side dry run). Where they
// disagree on an object (one refuses and the other accepts, or they refuse
// for different reasons, or the API server warns of something validate does
// not), the test fails, unless the difference is listed in
// knownValidateDifferences with why it is right.

// diffCase is one input of validate's tests: its files (name, content).
type diffCase struct {
	name  string
	files [][2]string
}

// validateDiffCases rebuilds the inputs of validate's tests at 1.37, the
// release of the helper's API server.
func validateDiffCases(t *testing.T) []diffCase {
	var cases []diffCase
	one := func(name, content string) {
		cases = append(cases, diffCase{name, [][2]string{{name + ".yaml", content}}})
	}
	for i, tc := range validateValidCases() {
		name := tc.csiName
		if name == "" {
			name = fmt.Sprintf("valid-%d.example.com", i)
		}
		one("valid-"+tc.name, csiDriverNamed(name, tc.spec))
	}
	for i, tc := range validateRuleCases() {
		n := tc.csiName
		if n == "" && !tc.nameless {
			n = fmt.Sprintf("rule-%d.example.com", i)
		}
		doc := csiDriverNamed(n, tc.spec)
		if tc.nameless {
			doc = strings.Replace(doc, "metadata:\n  name: \n", "metadata: {}\n", 1)
		}
		one("rule-"+tc.name, doc)
	}
	unset := "  tokenRequests: [{audience: vault}]\n"
	for i, spec := range []string{unset, unset + "  serviceAccountTokenInSecrets: false\n", unset + "  serviceAccountTokenInSecrets: true\n", "  podInfoOnMount: false\n"} {
		one(fmt.Sprintf("tokens-%d", i), csiDriverNamed(fmt.Sprintf("tokens-%d.example.com", i), spec))
	}
	for _, tc := range apiRequiredCases() {
		one("required-"+tc.name, tc.doc)
	}
	// What validate checks that the API server does not: the references
	// between objects, and the kubelet's need of a bound claim.
	one("reference-pod-claim", "apiVersion: v1\nkind: Pod\nmetadata: {name: claimless, namespace: default}\nspec:\n  containers: [{name: c, image: busybox}]\n  volumes: [{name: data, persistentVolumeClaim: {claimName: absent}}]\n")
	one("reference-unbound-claim", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: unbound, namespace: default}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n")
	for _, tc := range refusedWithTokensCases() {
		one("refused-tokens-"+tc.name, csiDriverNamed("refused-"+tc.name+".example.com", tc.spec))
	}
	drivers := csiDriverNamed(refDriverName, "") + "---\n" + csiDriverNamed(ephDriver, "  volumeLifecycleModes: [Persistent, Ephemeral]\n")
	for _, tc := range validateDriverNameCases() {
		one("names-"+tc.name, drivers+"---\n"+tc.doc)
	}
	one("badinput-unknown-field", csiDriverNamed("a.example.com", "  attachRequird: true\n"))
	one("badinput-unknown-field-second-document", csiDriverNamed("a.example.com", "")+"---\n"+csiDriverNamed("b.example.com", "  tokenRequests: [{audience: a, expiration: 600}]\n"))
	one("badinput-bad-yaml", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: a.example.com\nspec: [\n")
	files, _ := preflightInput(t, workDir(t))
	pre := diffCase{name: "preflight"}
	for name, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pre.files = append(pre.files, [2]string{name, string(b)})
	}
	sort.Slice(pre.files, func(i, j int) bool { return pre.files[i][0] < pre.files[j][0] })
	cases = append(cases, pre)
	samples, _ := filepath.Glob(filepath.Join("..", "fixtures", "samples", "*", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join("..", "fixtures", "samples", "*.yaml"))
	for _, s := range append(samples, more...) {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, diffCase{"sample-" + strings.TrimSuffix(filepath.Base(s), ".yaml"), [][2]string{{filepath.Base(s), string(b)}}})
	}
	return cases
}

// objectNames are the kind/namespace/name of a case's objects, for
// putting cases with no name in common into one run.
func objectNames(c diffCase) []string {
	var out []string
	for _, f := range c.files {
		for _, doc := range strings.Split(f[1], "\n---\n") {
			var o struct {
				Kind     string
				Metadata struct{ Name, Namespace string }
			}
			if yaml.Unmarshal([]byte(doc), &o) == nil && o.Kind != "" {
				out = append(out, o.Kind+"/"+o.Metadata.Namespace+"/"+o.Metadata.Name)
			}
		}
	}
	return out
}

// batches groups the cases into as few runs as their object names allow
// (the simulator refuses one name twice in an input).
func batches(cases []diffCase) [][]diffCase {
	var out [][]diffCase
	var used []map[string]bool
next:
	for _, c := range cases {
		names := objectNames(c)
		for i := range out {
			clash := false
			for _, n := range names {
				clash = clash || used[i][n]
			}
			if !clash {
				out[i] = append(out[i], c)
				for _, n := range names {
					used[i][n] = true
				}
				continue next
			}
		}
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		out, used = append(out, []diffCase{c}), append(used, m)
	}
	return out
}

// difference is where validate and the API server disagree on an object.
type difference struct {
	file, object string
	side         string // "validate" (only validate says it) or "apiserver"
	severity     string // error or warning
	message      string
}

func (d difference) String() string {
	return fmt.Sprintf("%s: %s: only %s: %s %s", d.file, d.object, d.side, strings.ToUpper(d.severity), d.message)
}

const apiServerPrefix = "API server: "

// unknownFieldRe finds the field an unknown-field message names (the two
// sides word it differently).
var unknownFieldRe = regexp.MustCompile(`unknown field "([^"]+)"`)

// refusalRe is a refusal of the API server that is not a list of field
// errors: decoding (BadRequest) or admission (Forbidden); its reason is
// after "is forbidden: " when there is one.
var refusalRe = regexp.MustCompile(`^refused \(([A-Za-z]+)\): (?:.* is forbidden: )?(.*)$`)

// sameProblem: two messages about the same problem: the same words, the
// same unknown field, or validate's message quoting the API server's
// admission refusal.
func sameProblem(a, b string) bool {
	if a == b {
		return true
	}
	ma, mb := unknownFieldRe.FindStringSubmatch(a), unknownFieldRe.FindStringSubmatch(b)
	if ma != nil && mb != nil {
		return ma[1] == mb[1]
	}
	for _, p := range [][2]string{{a, b}, {b, a}} {
		if m := refusalRe.FindStringSubmatch(p[0]); m != nil && m[1] == "Forbidden" && strings.Contains(p[1], m[2]) {
			return true
		}
	}
	return false
}

// stoppedEarly: the API server refused the object before validating it
// (at decoding or admission), so validate's other errors cannot be
// compared with its.
func stoppedEarly(apiErrs []string) bool {
	for _, e := range apiErrs {
		if refusalRe.MatchString(e) {
			return true
		}
	}
	return false
}

// differences compares, object by object, validate's findings with the
// API server's verdict.
func differences(fs []vFinding) []difference {
	type key struct{ src, obj string }
	type sides struct {
		judged                             bool
		toolErr, apiErr, toolWarn, apiWarn []string
	}
	by := map[key]*sides{}
	var keys []key
	for _, f := range fs {
		if f.Object == "" {
			continue
		}
		k := key{f.Source, f.Object}
		s := by[k]
		if s == nil {
			s = &sides{}
			by[k] = s
			keys = append(keys, k)
		}
		msg, api := strings.CutPrefix(f.Message, apiServerPrefix)
		switch {
		case api && f.Severity == "error":
			s.judged, s.apiErr = true, append(s.apiErr, msg)
		case api && f.Severity == "warning":
			s.apiWarn = append(s.apiWarn, msg)
		case api:
			s.judged = true
		case f.Severity == "error":
			s.toolErr = append(s.toolErr, msg)
		case f.Severity == "warning":
			s.toolWarn = append(s.toolWarn, msg)
		}
	}
	var out []difference
	for _, k := range keys {
		s := by[k]
		if !s.judged {
			continue // not an object the API server could be given (YAML errors)
		}
		d := func(side, sev string, only []string) {
			for _, m := range only {
				out = append(out, difference{k.src, k.obj, side, sev, m})
			}
		}
		if !stoppedEarly(s.apiErr) {
			d("validate", "error", unmatched(s.toolErr, s.apiErr))
		}
		d("apiserver", "error", unmatched(s.apiErr, s.toolErr))
		d("apiserver", "warning", unmatched(s.apiWarn, s.toolWarn))
		if strings.HasPrefix(k.obj, "CSIDriver ") {
			// validate's CSIDriver warnings are the API server's strategy's.
			d("validate", "warning", unmatched(s.toolWarn, s.apiWarn))
		}
	}
	return out
}

// unmatched are the messages of a that no message of b is about.
func unmatched(a, b []string) []string {
	var out []string
	for _, m := range a {
		found := false
		for _, n := range b {
			found = found || sameProblem(m, n)
		}
		if !found {
			out = append(out, m)
		}
	}
	return out
}

// knownDifference is a difference that is right: validate checks what a
// kubelet, or another controller, checks later and the API server never
// does, or the two word the same refusal differently.
type knownDifference struct {
	object, side, contains string
	why                    string
}

func (k knownDifference) matches(d difference) bool {
	return strings.HasPrefix(d.object, k.object) && d.side == k.side && strings.Contains(d.message, k.contains)
}

var knownValidateDifferences = []knownDifference{
	{
		object: "Pod ", side: "validate", contains: `volume mode "Ephemeral" not supported by driver`,
		why: "the kubelet's check when it mounts an inline volume (csi_mounter.go supportsVolumeLifecycleMode, docs/kubelet.md §13); the API server does not read CSIDrivers when it admits a pod",
	},
	{
		object: "Pod ", side: "validate", contains: "persistentVolumeClaim.claimName: PersistentVolumeClaim ",
		why: "a reference to another object: the API server stores a pod whose claim does not exist yet; the kubelet waits for it",
	},
	{
		object: "PersistentVolume ", side: "validate", contains: "SecretRef: Secret ",
		why: "a reference to another object: the Secret is read by the kubelet (or the CSI sidecars) when it calls the driver, never by the API server",
	},
	{
		object: "PersistentVolumeClaim ", side: "validate", contains: "spec.volumeName: the claim names no PersistentVolume",
		why: "the kubelet mounts bound claims only (the PV controller binds them in a cluster); the API server stores an unbound claim",
	},
	{
		object: "PersistentVolumeClaim ", side: "validate", contains: "spec.volumeName: PersistentVolume ",
		why: "a reference to another object: a claim may name a PV that is not there yet (pre-binding); the API server does not look",
	},
}

// TestValidateAgreesWithAPIServer: the differential check. Every case's
// objects are judged by validate and by the API server in one run of
// `validate --apiserver -o json`; a difference not listed as known fails,
// and so does a known difference that no longer occurs (the list stays
// true).
func TestValidateAgreesWithAPIServer(t *testing.T) {
	apiserverHelper(t)
	var mu sync.Mutex
	seen := make([]bool, len(knownValidateDifferences))
	t.Run("batches", func(t *testing.T) {
		slots := make(chan struct{}, apiServersAtOnce)
		for i, batch := range batches(validateDiffCases(t)) {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				ds := func() []difference {
					slots <- struct{}{}
					defer func() { <-slots }()
					return judgeBatch(t, batch)
				}()
				mu.Lock()
				defer mu.Unlock()
				for _, d := range ds {
					known := false
					for j, k := range knownValidateDifferences {
						if k.matches(d) {
							known, seen[j] = true, true
						}
					}
					if !known {
						t.Errorf("validate and the API server disagree: %s", d)
					}
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	for j, k := range knownValidateDifferences {
		if !seen[j] {
			t.Errorf("known difference no longer seen (drop it from the list): %+v", k)
		}
	}
}

// apiServerRunLimit bounds one `validate --apiserver` run of a batch: above
// the control plane's own readiness wait (60 s, cluster's waitReady), which
// a loaded machine can use up, plus the judging after it. runSim's 60 s
// killed such runs while they still waited (two clones' tests at once).
const apiServerRunLimit = 4 * time.Minute

// apiServersAtOnce: how many batches start a control plane at the same
// time (each an API server and an etcd; more only make all of them slower
// on a small machine).
const apiServersAtOnce = 2

// judgeBatch runs `validate --apiserver -o json` on a batch of cases and
// returns the differences.
func judgeBatch(t *testing.T, batch []diffCase) []difference {
	work := workDir(t)
	args := []string{"validate", "--apiserver", "-o", "json"}
	for _, c := range batch {
		dir := filepath.Join(work, c.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range c.files {
			args = append(args, writeFile(t, dir, f[0], f[1]))
		}
	}
	r := runSimWithin(t, apiServerRunLimit, args...)
	if r.Code != 0 && r.Code != 2 {
		t.Fatalf("exit %d\n%s", r.Code, r)
	}
	fs := parseFindings(t, r.Stdout)
	if n := countVerdicts(fs); n == 0 {
		t.Fatalf("no verdict of the API server\n%s", r)
	}
	ds := differences(fs)
	for i := range ds {
		ds[i].file = strings.TrimPrefix(ds[i].file, work+"/")
	}
	return ds
}

func parseFindings(t *testing.T, stdout string) []vFinding {
	t.Helper()
	var fs []vFinding
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var f vFinding
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("not a finding: %q: %v", line, err)
		}
		fs = append(fs, f)
	}
	return fs
}

func countVerdicts(fs []vFinding) int {
	n := 0
	for _, f := range fs {
		if strings.HasPrefix(f.Message, apiServerPrefix) {
			n++
		}
	}
	return n
}

// refusedWithTokensCases are CSIDrivers with tokenRequests and
// serviceAccountTokenInSecrets unset that the API server refuses: at
// decoding (an unknown field) or at validation. It gives no warning then.
func refusedWithTokensCases() []struct{ name, spec, err string } {
	return []struct{ name, spec, err string }{
		{"unknown-field", "  tokenRequests: [{audience: a, expiration: 600}]\n", `unknown field "spec.tokenRequests[0].expiration"`},
		{"invalid", "  tokenRequests: [{audience: a}]\n  fsGroupPolicy: Bad\n", `spec.fsGroupPolicy: Unsupported value: "Bad"`},
		{"invalid-token", "  tokenRequests: [{audience: a, expirationSeconds: 60}]\n", "spec.tokenRequests[0].expirationSeconds: Invalid value: 60"},
	}
}

// TestValidateNoWarningForRefusedCSIDriver: the API server warns that
// serviceAccountTokenInSecrets is unset only for a CSIDriver it accepts
// (rest.BeforeCreate calls WarningsOnCreate after decoding and
// validation), so validate prints the warning only for those; found by
// TestValidateAgreesWithAPIServer.
func TestValidateNoWarningForRefusedCSIDriver(t *testing.T) {
	for _, tc := range refusedWithTokensCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := writeFile(t, workDir(t), "csidriver.yaml", csiDriverNamed("refused.example.com", tc.spec))
			r := runValidateBoth(t, "-f", f)
			wantCode(t, r.JSON, 2)
			if countSeverity(r.Findings, "warning") != 0 {
				t.Errorf("a warning for a CSIDriver the API server refuses:\n%s", r.Text.Stdout)
			}
			if !strings.Contains(r.Text.Stdout, tc.err) {
				t.Errorf("no error %q:\n%s", tc.err, r.Text.Stdout)
			}
		})
	}
}

// apiRequiredCases are objects the API server refuses for fields the
// simulation does not need, which validate accepted before the
// differential check found them; each with the API server's messages.
func apiRequiredCases() []struct {
	name, doc, object string
	want              []string
} {
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: default}\nspec:\n%s"
	return []struct {
		name, doc, object string
		want              []string
	}{
		{"pv-no-capacity-no-modes", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-bare}\nspec:\n  csi: {driver: " + refDriverName + ", volumeHandle: h}\n",
			"PersistentVolume pv-bare", []string{"spec.accessModes: Required value", "spec.capacity: Required value", `spec.capacity: Unsupported value: null: supported values: "storage"`}},
		{"claim-no-request-no-modes", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: bare, namespace: default}\nspec: {volumeName: pv-x}\n",
			"PersistentVolumeClaim default/bare", []string{"spec.accessModes: Required value: at least 1 access mode is required", "spec.resources[storage]: Required value"}},
		{"pod-no-containers", fmt.Sprintf(pod, "no-containers", "  volumes: [{name: v, emptyDir: {}}]\n"),
			"Pod default/no-containers", []string{"spec.containers: Required value"}},
		{"pod-mount-of-no-volume", fmt.Sprintf(pod, "mounts", "  initContainers: [{name: i, image: busybox, volumeMounts: [{name: gone, mountPath: /i}]}]\n  containers: [{name: c, image: busybox, volumeMounts: [{name: v, mountPath: /v}, {name: missing, mountPath: /x}]}]\n  volumes: [{name: v, emptyDir: {}}]\n"),
			"Pod default/mounts", []string{`spec.initContainers[0].volumeMounts[0].name: Not found: "gone"`, `spec.containers[0].volumeMounts[1].name: Not found: "missing"`}},
		{"secret-bad-keys", "apiVersion: v1\nkind: Secret\nmetadata: {name: keys, namespace: default}\ndata: {\"bad key\": YQ==}\nstringData: {\"..x\": a, ok: b}\n",
			"Secret default/keys", []string{
				`data[..x]: Invalid value: "..x": must not start with '..'`,
				`data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`}},
		{"attachment-no-source", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va-nosource}\nspec: {attacher: " + refDriverName + ", nodeName: node-1, source: {}}\n",
			"VolumeAttachment va-nosource", []string{"spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"}},
	}
}

// TestValidateAPIServerRequired: validate refuses, as the API server does,
// what the simulation itself does not need (a PV's capacity and access
// modes, a claim's storage request, a pod's containers and the volumes
// its mounts name, a Secret's keys, a VolumeAttachment's source); found by
// TestValidateAgreesWithAPIServer. Exit 2, the API server's messages.
func TestValidateAPIServerRequired(t *testing.T) {
	for _, tc := range apiRequiredCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := writeFile(t, workDir(t), "objects.yaml", tc.doc)
			r := runValidateBoth(t, "-f", f)
			wantCode(t, r.JSON, 2)
			var got []string
			for _, fd := range r.Findings {
				if fd.Object == tc.object && fd.Severity == "error" {
					got = append(got, fd.Message)
				}
			}
			// Every error of the API server (a claim's reference to its
			// PV is validate's own check).
			if missing := unmatched(tc.want, got); len(missing) > 0 {
				t.Errorf("errors of %s: missing %q\n%s", tc.object, missing, r.Text.Stdout)
			}
		})
	}
}

// crdDocs are a CustomResourceDefinition and two of its objects: one the
// API server accepts, one its schema refuses.
const crdDocs = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: secretproviderclasses.example.com
spec:
  group: example.com
  names: {kind: SecretProviderClass, plural: secretproviderclasses, singular: secretproviderclass}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              provider: {type: string}
---
apiVersion: example.com/v1
kind: SecretProviderClass
metadata: {name: vault-db, namespace: app}
spec: {provider: vault}
---
apiVersion: example.com/v1
kind: SecretProviderClass
metadata: {name: wrong, namespace: app}
spec: {provider: 7}
`

// TestValidateAPIServer: validate --apiserver prints the API server's
// verdict on every object beside validate's own: its warnings, "accepted"
// (created, for what other objects need: the CRD; dry-run for the rest),
// or each field it refuses, at the field's line; CRDs go first, so that
// their objects are judged by their schema; objects of kinds the
// simulator does not read are judged too. Exit 2 when the API server
// refuses, and nothing is left (no process, no directory).
func TestValidateAPIServer(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	f := writeFile(t, work, "objects.yaml", csiDriverNamed("tokens.example.com", "  tokenRequests: [{audience: vault}]\n")+"---\n"+crdDocs)
	tmp := ownTempDir(t, work)
	r := runValidateBoth(t, "-f", f, "--apiserver")
	wantCode(t, r.JSON, 2)
	doc := func(n int) string { return fmt.Sprintf("%s: document %d", f, n) }
	checkFindings(t, r, []wantFinding{
		{Source: doc(1), Object: "CSIDriver tokens.example.com", Severity: "warning", Message: tokensInSecretsWarning},
		{Source: doc(1), Object: "CSIDriver tokens.example.com", Severity: "info", Contains: []string{"valid; after defaulting: "}},
		{Source: doc(1), Object: "CSIDriver tokens.example.com", Severity: "warning", Message: "API server: " + tokensInSecretsWarning},
		{Source: doc(1), Object: "CSIDriver tokens.example.com", Severity: "info", Message: "API server: accepted (server-side dry run)"},
		{Source: doc(2), Object: "CustomResourceDefinition secretproviderclasses.example.com", Severity: "info", Message: "API server: accepted (created: the other objects need it)"},
		{Source: doc(3), Object: "SecretProviderClass app/vault-db", Severity: "info", Message: "API server: accepted (server-side dry run)"},
		{Source: doc(4), Object: "SecretProviderClass app/wrong", Severity: "error", Contains: []string{"API server: spec.provider: Invalid value: ", `spec.provider in body must be of type string: "integer"`}},
	})
	for _, fd := range r.Findings {
		if fd.Object == "SecretProviderClass app/wrong" && fd.Line != 37 {
			t.Errorf("the refusal is at line %d, want 37 (spec.provider)", fd.Line)
		}
	}
	oneLineError(t, r.Text, "the API server refuses what validate accepts: 1 refusal(s)")
	wantNothingLeft(t, tmp)
}

// ownTempDir gives the simulators this test starts a TMPDIR of its own (in
// work), where --apiserver makes its control plane's directory: what is
// left there, and a process whose command line or environment names it,
// is this test's, whatever else runs on the machine (another `validate
// --apiserver`, another clone's tests).
func ownTempDir(t *testing.T, work string) string {
	t.Helper()
	tmp := filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	return tmp
}

// wantNothingLeft: no directory left in the test's TMPDIR, and no process
// that names it (the control plane's processes have its directory on their
// command lines and the TMPDIR in their environment).
func wantNothingLeft(t *testing.T, tmp string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}
	if procs := processesNaming(tmp); len(procs) > 0 {
		t.Errorf("processes of the control plane left: %s", strings.Join(procs, "; "))
	}
}

// processesNaming lists the processes (but this one) whose command line or
// environment contains token: a directory only this test made.
func processesNaming(token string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range dirs {
		if filepath.Base(d) == strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		environ, _ := os.ReadFile(filepath.Join(d, "environ"))
		if bytes.Contains(cmdline, []byte(token)) || bytes.Contains(environ, []byte(token)) {
			out = append(out, filepath.Base(d)+": "+strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " "))
		}
	}
	return out
}

// TestValidateAPIServerBadUse: --apiserver judges at the helper's release
// only (exit 2 otherwise), and without the helper validate prints its own
// findings and exits 3 with how to get it (README exit codes).
func TestValidateAPIServerBadUse(t *testing.T) {
	work := workDir(t)
	f := writeFile(t, work, "csidriver.yaml", csiDriverNamed(refDriverName, ""))
	t.Run("other-release", func(t *testing.T) {
		r := runSim(t, "validate", "-f", f, "--apiserver", "--kubelet-version", "1.34")
		wantCode(t, r, 2)
		oneLineError(t, r, "--apiserver: the API server is of release 1.37, --kubelet-version 1.34")
	})
	t.Run("feature-gates", func(t *testing.T) {
		r := runSim(t, "validate", "-f", f, "--apiserver", "--feature-gates", "SELinuxMount=true")
		wantCode(t, r, 2)
		oneLineError(t, r, "drop --feature-gates")
	})
	t.Run("no-helper", func(t *testing.T) {
		cmd := exec.Command(simBin(t), "validate", "-f", f, "--apiserver")
		cmd.Env = append(os.Environ(), "CSI_KUBELET_SIM_APISERVER="+filepath.Join(work, "absent"))
		out, err := cmd.Output()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 3 {
			t.Fatalf("exit %v, want 3\n%s", err, out)
		}
		if !strings.Contains(string(out), "CSIDriver "+refDriverName+": valid") {
			t.Errorf("validate's own findings not printed:\n%s", out)
		}
		if msg := string(ee.Stderr); !strings.Contains(msg, "absent") || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
			t.Errorf("want one line naming the helper: %q", msg)
		}
	})
}

// TestValidateAPIServerInterrupted: Ctrl-C while the API server starts or
// judges: exit 130, one line, and nothing of the control plane left (no
// temporary directory, no process of the helper or etcd).
func TestValidateAPIServerInterrupted(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	f := writeFile(t, work, "csidriver.yaml", csiDriverNamed(refDriverName, ""))
	tmp := ownTempDir(t, work)
	s := startSim(t, "validate", "--apiserver", "-f", f)
	time.Sleep(time.Second)
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := s.wait(t, 30*time.Second)
	wantCode(t, r, 130)
	oneLineError(t, r, "interrupted")
	wantNothingLeft(t, tmp)
}
