package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/buildinfo"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// cli runs one command line as main does, on buffers.
func cli(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, session.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

const (
	testDriver    = "drv.example.com"
	csiDriverYAML = "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: drv.example.com}\nspec: {attachRequired: false, volumeLifecycleModes: [Ephemeral]}\n"
	inlinePodYAML = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default, uid: 9a3c3c6e-1111-4d2b-9c51-0e2f8d1a7b01}\nspec:\n  containers: [{name: app, image: x, volumeMounts: [{name: v, mountPath: /v}]}]\n  volumes: [{name: v, csi: {driver: drv.example.com}}]\n"
	emptyDirPod   = "apiVersion: v1\nkind: Pod\nmetadata: {name: scratch, namespace: default}\nspec:\n  containers: [{name: app, image: x, volumeMounts: [{name: e, mountPath: /e}]}]\n  volumes: [{name: e, emptyDir: {}}]\n"
	deployment    = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
	// badCSIDriver has an invalid fsGroupPolicy: the API server refuses it.
	badCSIDriver = "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: bad.example.com}\nspec: {fsGroupPolicy: Sometimes}\n"
)

// Every command prints its description and examples on stdout for
// --help and `help COMMAND`, and exits 0 (issue 11, item 5).
func TestHelpOnStdout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"help", "run"}, []string{"Run the kubelet's node lifecycle", "Examples:", "--endpoint", "--junit", "-R, --recursive"}},
		{[]string{"run", "--help"}, []string{"Run the kubelet's node lifecycle", "Examples:"}},
		{[]string{"help", "plan"}, []string{"with no driver at all", "--node-capabilities"}},
		{[]string{"conformance", "-h"}, []string{"Check a CSI driver against what a kubelet needs", "--focus"}},
		{[]string{"help", "validate"}, []string{"Judge the manifests as the API server", "validate -f *.yaml checks all"}},
		{[]string{"help", "load"}, []string{"Run a node's worth of pods", "--replicas", "Examples:"}},
		{[]string{"help", "cleanup"}, []string{"Finish what interrupted runs left", "--root-dir"}},
		{[]string{"help", "version"}, []string{"kubelet releases", "-o, --output"}},
		{[]string{"help", "tokens", "verify"}, []string{"Check a token as a driver", "--jwks-url"}},
		{[]string{"tokens", "keygen", "--help"}, []string{"Generate a service-account signing key pair", "--private-key"}},
		{[]string{"--help"}, []string{"Exit codes:", "Available Commands:", "completion", "conformance"}},
		{[]string{"help"}, []string{"Exit codes:", "Available Commands:"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := cli(t, "", tc.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// cobra's completion scripts, one per shell.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "complete -o default -F __start_csi-kubelet-sim csi-kubelet-sim",
		"zsh":        "#compdef csi-kubelet-sim",
		"fish":       "complete -c csi-kubelet-sim",
		"powershell": "Register-ArgumentCompleter",
	} {
		stdout, stderr, code := cli(t, "", "completion", shell)
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("completion %s: exit %d, stderr %q, stdout lacks %q", shell, code, stderr, want)
		}
	}
	// Flag values complete too.
	if stdout, _, _ := cli(t, "", "__complete", "run", "--kubelet-version", ""); !strings.HasPrefix(stdout, "1.30\n1.31\n") || !strings.Contains(stdout, "1.37\n") {
		t.Errorf("--kubelet-version completion: %q", stdout)
	}
	if stdout, _, _ := cli(t, "", "__complete", "validate", "-o", ""); !strings.HasPrefix(stdout, "text\njson\n") {
		t.Errorf("-o completion: %q", stdout)
	}
	// -f completes manifests.
	stdout, _, _ := cli(t, "", "__complete", "run", "-f", "")
	if !strings.Contains(stdout, "yaml") {
		t.Errorf("-f completion: %q", stdout)
	}
}

// Usage errors are one line on stderr and exit 2; nothing on stdout.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	manifest := writeTestFile(t, dir, "a.yaml", csiDriverYAML)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `csi-kubelet-sim: unknown command "bogus"; 'csi-kubelet-sim --help' lists the commands`},
		{[]string{"rn"}, `csi-kubelet-sim: unknown command "rn" (did you mean run?); 'csi-kubelet-sim --help' lists the commands`},
		{[]string{"run", "--bogus"}, "csi-kubelet-sim: unknown flag: --bogus"},
		{[]string{"run", "--hold"}, "csi-kubelet-sim: flag needs an argument: --hold"},
		{[]string{"run", "--selinux=maybe"}, `csi-kubelet-sim: invalid argument "maybe" for "--selinux" flag: want true or false`},
		{[]string{"version", "extra"}, "csi-kubelet-sim: version: unexpected arguments [extra] (it reads no files)"},
		{[]string{"version", "-o", "xml"}, `csi-kubelet-sim: --output "xml": want text, json, yaml, jsonpath=TEMPLATE, jsonpath-file=FILE, go-template=TEMPLATE or go-template-file=FILE`},
		{[]string{"cleanup", "--root-dir", dir, manifest}, "csi-kubelet-sim: cleanup: unexpected arguments [" + manifest + "] (it reads no files)"},
		{[]string{"tokens", "jwks", "--key", manifest, manifest}, "csi-kubelet-sim: tokens jwks: unexpected arguments [" + manifest + "] (it reads no files)"},
		{[]string{"validate"}, "csi-kubelet-sim: validate: no input: give files with -f or as arguments"},
		{[]string{"completion", "tcsh"}, `csi-kubelet-sim: completion: unknown shell "tcsh": want bash, zsh, fish or powershell`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := cli(t, "", tc.args...)
			if code != session.ExitUsage {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting %q", stderr, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q", stdout)
			}
		})
	}
	// No command at all: the usage on stderr, then the error.
	_, stderr, code := cli(t, "")
	if code != session.ExitUsage || !strings.HasSuffix(stderr, "csi-kubelet-sim: a command is needed\n") || !strings.Contains(stderr, "Available Commands:") {
		t.Errorf("no command: exit %d, stderr %q", code, stderr)
	}
}

func TestVersion(t *testing.T) {
	stdout, _, code := cli(t, "", "version", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var v buildinfo.VersionInfo
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	// 1.38 is accepted as a pre-release; the default is the newest that shipped.
	if v.Version == "" || !strings.HasPrefix(v.GoVersion, "go") || v.Module != "github.com/csi-kubelet-sim/csi-kubelet-sim" ||
		len(v.Releases) != node.MaxMinor-29 || v.Releases[0] != "1.30" || v.Releases[len(v.Releases)-1] != "1.38" || v.DefaultKube != "1.37" ||
		len(v.PreReleases) != 1 || v.PreReleases["1.38"] != "v1.38.0-beta.0" {
		t.Errorf("version %+v", v)
	}
	text, _, _ := cli(t, "", "version")
	if !strings.HasPrefix(text, "csi-kubelet-sim "+v.Version+" (simulates kubelet 1.30 to 1.38 (1.38 is a pre-release: v1.38.0-beta.0), default 1.37)\n") {
		t.Errorf("text %q", text)
	}
	if short, _, _ := cli(t, "", "--version"); short != "csi-kubelet-sim "+v.Version+"\n" {
		t.Errorf("--version %q", short)
	}
}

// `validate -f *.yaml`: the shell passes the second file as an argument;
// it is judged too (issue 11, item 1).
func TestValidateEveryFile(t *testing.T) {
	dir := t.TempDir()
	good := writeTestFile(t, dir, "a.yaml", csiDriverYAML)
	bad := writeTestFile(t, dir, "b.yaml", badCSIDriver)
	for _, args := range [][]string{{"validate", "-f", good, bad}, {"validate", good, bad}, {"validate", bad, "-f", good}} {
		stdout, stderr, code := cli(t, "", args...)
		if code != session.ExitUsage || !strings.Contains(stdout, bad+": document 1: line 4: CSIDriver bad.example.com: spec.fsGroupPolicy") ||
			!strings.Contains(stdout, "CSIDriver drv.example.com: valid") {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
	}
}

// An input with nothing usable exits 2 in every command that reads
// manifests; a CSIDriver without a Pod runs the default pod and says so
// (issue 11, item 3).
func TestNothingUsable(t *testing.T) {
	dir := t.TempDir()
	empty := writeTestFile(t, dir, "empty.yaml", "# nothing here\n---\n")
	other := writeTestFile(t, dir, "deploy.yaml", deployment)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--driver-name", testDriver, empty}, "nothing usable in " + empty + ": no object the kubelet reads"},
		{[]string{"plan", "--driver-name", testDriver, "-f", other}, "nothing usable in " + other},
		{[]string{"run", "--endpoint", "/nonexistent.sock", empty}, "nothing usable in " + empty},
		{[]string{"validate", empty, other}, "nothing to validate in " + empty + ", " + other},
	} {
		_, stderr, code := cli(t, "", tc.args...)
		if code != session.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
	drv := writeTestFile(t, dir, "drv.yaml", csiDriverYAML)
	stdout, stderr, code := cli(t, "", "plan", drv)
	if code != 0 || !strings.HasPrefix(stdout, "no Pod in the input: using the default pod default/csi-kubelet-sim") || !strings.Contains(stdout, "NodePublishVolume") {
		t.Errorf("CSIDriver only: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// -R reads subdirectories; without it they are named in a warning.
func TestRecursive(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "drv.yaml", csiDriverYAML)
	if err := os.Mkdir(filepath.Join(dir, "pods"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "pods"), "pod.yaml", inlinePodYAML)
	stdout, stderr, code := cli(t, "", "plan", "-f", dir)
	if code != 0 || !strings.Contains(stderr, "warning: "+dir+": subdirectories not read: pods (-R reads them)") || !strings.Contains(stdout, "no Pod in the input") {
		t.Errorf("without -R: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = cli(t, "", "plan", "-R", "-f", dir)
	if code != 0 || stderr != "" || !strings.Contains(stdout, "pod default/web") || strings.Contains(stdout, "no Pod in the input") {
		t.Errorf("with -R: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// --selinux: detected unless given, and the header says which and why
// (issue 11, item 4).
func TestSELinuxHost(t *testing.T) {
	yes, no := func() bool { return true }, func() bool { return false }
	for _, tc := range []struct {
		args    []string
		detect  func() bool
		want    bool
		wantWhy string
	}{
		{nil, yes, true, "this host has SELinux (/sys/fs/selinux)"},
		{nil, no, false, "this host has no SELinux (/sys/fs/selinux absent): no context= mount option; --selinux=true simulates an SELinux host"},
		{[]string{"--selinux"}, no, true, "simulated (--selinux=true)"},
		{[]string{"--selinux=true"}, no, true, "simulated (--selinux=true)"},
		{[]string{"--selinux=false"}, yes, false, "off (--selinux=false): no context= mount option"},
	} {
		o := &session.CommonOptions{}
		fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
		addCommonFlags(o, fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := o.SELinux.Resolve(tc.detect); got.Enabled != tc.want || got.Why != tc.wantWhy {
			t.Errorf("%v: %+v, want %v %q", tc.args, got, tc.want, tc.wantWhy)
		}
	}
	dir := t.TempDir()
	drv := writeTestFile(t, dir, "drv.yaml", csiDriverYAML)
	stdout, _, _ := cli(t, "", "plan", drv, "--selinux")
	if !strings.Contains(stdout, "\n  selinux     simulated (--selinux=true)\n") {
		t.Errorf("header:\n%s", stdout)
	}
	stdout, _, _ = cli(t, "", "plan", drv, "--selinux=false", "-o", "json")
	if !strings.Contains(stdout, `"selinux":{"enabled":false,"why":"off (--selinux=false): no context= mount option"}`) {
		t.Errorf("JSON summary:\n%s", stdout)
	}
}

// The conformance summary counts every call the driver received: the
// probe's included (issue 11, item 6: 171 counted, 178 received).
func TestConformanceCallCount(t *testing.T) {
	d := identityDriver(testDriver, nil)
	sock := csifake.ServeTest(t, d)
	stdout, stderr, code := cli(t, "", "conformance", "--endpoint", sock, "--focus", "^(registration|timing)/", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var sum struct {
		Calls int `json:"calls"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	if got := len(d.Calls()); sum.Calls != got || got == 0 {
		t.Errorf("summary says %d calls, the driver received %d", sum.Calls, got)
	}
}

// --focus/--skip that select nothing exit 2 naming the scenarios.
func TestConformanceSelectsNothing(t *testing.T) {
	sock := csifake.ServeTest(t, identityDriver(testDriver, nil))
	for _, args := range [][]string{{"--focus", "nomatch"}, {"--skip", "."}, {"--focus", "^registration/", "--skip", "registration"}} {
		stdout, stderr, code := cli(t, "", append([]string{"conformance", "--endpoint", sock}, args...)...)
		if code != session.ExitUsage || !strings.Contains(stderr, "select none of the") || !strings.Contains(stderr, "registration/node-info") || stdout != "" {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
	}
}

// A driver that answers registration with an error is running: exit 1,
// and no "is the driver running" (issue 11, item 6).
func TestRegistrationErrorAnswer(t *testing.T) {
	failing := identityDriver(testDriver, nil)
	failing.Errors("GetPluginInfo", status.Error(codes.Internal, "config not loaded"))
	sock := csifake.ServeTest(t, failing)
	dir := t.TempDir()
	drv := writeTestFile(t, dir, "drv.yaml", csiDriverYAML)
	_, stderr, code := cli(t, "", "run", "--endpoint", sock, drv)
	if code != session.ExitFailed || !strings.Contains(stderr, "config not loaded") || !strings.Contains(stderr, "the driver answered registration with an error") ||
		strings.Contains(stderr, "is the driver running") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// Pods with no CSI volume exercise nothing of the driver: exit 2, not OK
// (issue 11, item 3).
func TestRunNoCSIVolume(t *testing.T) {
	sock := csifake.ServeTest(t, identityDriver(testDriver, nil))
	dir := t.TempDir()
	pod := writeTestFile(t, dir, "pod.yaml", emptyDirPod)
	junit := filepath.Join(dir, "run.xml")
	stdout, stderr, code := cli(t, "", "run", "--endpoint", sock, pod, "--junit", junit)
	if code != session.ExitUsage || !strings.Contains(stderr, "no CSI volume of the driver was mounted") || strings.Contains(stdout, "result      OK") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	doc := readJUnit(t, junit)
	last := doc.Suite.Cases[len(doc.Suite.Cases)-1]
	if last.Name != "result" || last.Failure == nil || !strings.Contains(last.Failure.Message, "no CSI volume") || doc.Suite.Failures != 1 {
		t.Errorf("junit %+v", doc)
	}
}

type junitDoc struct {
	Suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			ClassName string `xml:"classname,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitDoc {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return doc
}

// -v is verbose at every place of the command line, klog's --v=N too;
// the version is printed only by `version` and --version (issue 17): a CI
// step `csi-kubelet-sim -v plan pod.yaml` must plan, not print a version
// and exit 0.
func TestVerboseEverywhere(t *testing.T) {
	dir := t.TempDir()
	in := writeTestFile(t, dir, "in.yaml", csiDriverYAML+"---\n"+inlinePodYAML)
	plan := func(args ...string) (string, int) {
		t.Helper()
		stdout, stderr, code := cli(t, "", append(args, "--driver-name", testDriver, "--root-dir", filepath.Join(t.TempDir(), "root"))...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		if !strings.Contains(stdout, "NodePublishVolume") {
			t.Fatalf("%v: no plan printed:\n%s", args, stdout)
		}
		return stdout, strings.Count(stdout, "·")
	}
	_, quiet := plan("plan", in)
	for _, args := range [][]string{
		{"-v", "plan", in},
		{"plan", "-v", in},
		{"--verbose", "plan", in},
		{"--v=2", "plan", in},
		{"plan", "--v", "1", in},
		{"-vv", "plan", in},
	} {
		if _, steps := plan(args...); steps <= quiet {
			t.Errorf("%v: %d kubelet steps printed, want more than the %d without -v", args, steps, quiet)
		}
	}
	if _, _, code := cli(t, "", "plan", "--v=x", in, "--driver-name", testDriver); code != session.ExitUsage {
		t.Errorf("--v=x: exit %d, want %d", code, session.ExitUsage)
	}
	if stdout, _, code := cli(t, "", "-v"); code != session.ExitUsage || strings.Contains(stdout, "csi-kubelet-sim ") {
		t.Errorf("-v alone: exit %d, stdout %q; want the usage error, no version", code, stdout)
	}
	if stdout, _, code := cli(t, "", "--version"); code != 0 || !strings.HasPrefix(stdout, "csi-kubelet-sim ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("--version: exit %d, %q", code, stdout)
	}
}

// The build info is read only when a version is printed: a start that
// prints none (every run of every other command) does not pay for it.
func TestBuildInfoReadOnlyForVersion(t *testing.T) {
	reads := 0
	orig := buildinfo.ReadBuildInfo
	buildinfo.ReadBuildInfo = func() (*debug.BuildInfo, bool) { reads++; return orig() }
	t.Cleanup(func() { buildinfo.ReadBuildInfo = orig })
	in := writeTestFile(t, t.TempDir(), "in.yaml", csiDriverYAML+"---\n"+inlinePodYAML)
	for _, args := range [][]string{
		{"plan", in, "--driver-name", testDriver},
		{"validate", in},
		{"help", "run"},
		{"run", "--help"},
	} {
		cli(t, "", args...)
		if reads != 0 {
			t.Fatalf("%v read the build info %d times, want none", args, reads)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		reads = 0
		cli(t, "", args...)
		if reads != 1 {
			t.Errorf("%v read the build info %d times, want once", args, reads)
		}
	}
}

// A driver that answers GetPluginInfo with Unavailable is running: run
// and conformance exit 1 with the driver's own code and message, never
// "is the driver running". A socket nothing listens on is the environment:
// exit 3, saying so (issue 17).
func TestRegistrationUnavailableAnswer(t *testing.T) {
	d := identityDriver(testDriver, nil)
	d.Inject("GetPluginInfo", csifake.Fault{Err: status.Error(codes.Unavailable, "driver version not set"), Times: 2})
	sock := csifake.ServeTest(t, d)
	drv := writeTestFile(t, t.TempDir(), "drv.yaml", csiDriverYAML)
	const want = `the driver answered with an error: code Unavailable, message "driver version not set"`
	for _, args := range [][]string{{"run", "--endpoint", sock, drv}, {"conformance", "--endpoint", sock}} {
		_, stderr, code := cli(t, "", args...)
		if code != session.ExitFailed || !strings.Contains(stderr, want) || strings.Contains(stderr, "is the driver running") || strings.Contains(stderr, "nothing listens") {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", args[0], code, stderr, session.ExitFailed, want)
		}
	}

	stale := filepath.Join(t.TempDir(), "csi.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	for _, args := range [][]string{{"run", "--endpoint", stale, drv}, {"conformance", "--endpoint", stale}} {
		_, stderr, code := cli(t, "", args...)
		if code != session.ExitEnvironment || !strings.Contains(stderr, "nothing listens on the socket "+stale) || !strings.Contains(stderr, "connection refused") {
			t.Errorf("%s on a dead socket: exit %d, stderr %q; want %d and nothing listens", args[0], code, stderr, session.ExitEnvironment)
		}
	}
}

// A pod whose only CSI volume no container uses exercises nothing of the
// driver: the kubelet skips the volume, and the run exits 2 saying why
// (docs/kubelet.md §11).
func TestRunOnlyUnusedCSIVolume(t *testing.T) {
	d := identityDriver(testDriver, nil)
	sock := csifake.ServeTest(t, d)
	dir := t.TempDir()
	unused := strings.Replace(inlinePodYAML, "containers: [{name: app, image: x, volumeMounts: [{name: v, mountPath: /v}]}]", "containers: [{name: app, image: x}]", 1)
	in := writeTestFile(t, dir, "in.yaml", csiDriverYAML+"---\n"+unused)
	stdout, stderr, code := cli(t, "", "run", "--endpoint", sock, in, "--root-dir", filepath.Join(dir, "root"))
	if code != session.ExitUsage || !strings.Contains(stderr, "no CSI volume that a container uses") ||
		!strings.Contains(stdout, `skipping unused volume "v"`) || !strings.Contains(stdout, "skipped     default/web/v: unused") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, c := range d.Calls() {
		if c.Method == "NodePublishVolume" {
			t.Errorf("the unused volume was published")
		}
	}
}
