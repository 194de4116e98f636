package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// conformanceCLI runs `csi-kubelet-sim conformance ARGS` as main does.
func conformanceCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"conformance"}, args...), session.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

// identityDriver is a fake driver that answers the calls conformance makes
// before mounting anything: enough for registration/node-info and timing.
func identityDriver(name string, topology map[string]string) *csifake.Driver {
	return csifake.New(csifake.Config{Name: name, VendorVersion: "9.9.9", NodeID: "node-1", Topology: topology})
}

// serveDriver serves d on a socket and returns it with a fresh directory
// for the test's files.
func serveDriver(t *testing.T, d *csifake.Driver) (sock, dir string) {
	t.Helper()
	return csifake.ServeTest(t, d), t.TempDir()
}

func TestConformanceUsage(t *testing.T) {
	sock, dir := serveDriver(t, identityDriver("drv.example.com", nil))
	noDriver := writeTestFile(t, dir, "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n")
	other := writeTestFile(t, dir, "other.yaml", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: other.example.com}\nspec: {}\n")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no endpoint", []string{"--endpoint", ""}, session.ExitUsage, "--endpoint"},
		{"bad output", []string{"--endpoint", sock, "-o", "xml"}, session.ExitUsage, `--output "xml"`},
		{"bad focus", []string{"--endpoint", sock, "--focus", "("}, session.ExitUsage, "--focus: error parsing regexp"},
		{"bad skip", []string{"--endpoint", sock, "--skip", "[z-a]"}, session.ExitUsage, "--skip: error parsing regexp"},
		{"bad version", []string{"--endpoint", sock, "--kubelet-version", "1.20"}, session.ExitUsage, "--kubelet-version"},
		{"unknown gate", []string{"--endpoint", sock, "--kubelet-version", "1.34", "--feature-gates", "CSIServiceAccountTokenSecrets=true"}, session.ExitUsage, "--feature-gates: unrecognized feature gate: CSIServiceAccountTokenSecrets (kubelet 1.34)"},
		{"locked gate", []string{"--endpoint", sock, "--kubelet-version", "1.37", "--feature-gates", "CSIServiceAccountTokenSecrets=false"}, session.ExitUsage, "--feature-gates: cannot set feature gate CSIServiceAccountTokenSecrets to false, feature is locked to true"},
		{"bad gate value", []string{"--endpoint", sock, "--feature-gates", "SELinuxMount"}, session.ExitUsage, "--feature-gates: missing bool value"},
		{"bad timeout", []string{"--endpoint", sock, "--timeout", "0s"}, session.ExitUsage, "--timeout must be positive"},
		{"unknown flag", []string{"--endpoint", sock, "--hold", "1s"}, session.ExitUsage, "unknown flag: --hold"},
		{"arguments are files", []string{"--endpoint", sock, "extra"}, session.ExitUsage, "stat extra: no such file or directory"},
		{"bad attributes", []string{"--endpoint", sock, "--volume-attributes", "novalue"}, session.ExitUsage, "--volume-attributes"},
		{"no CSIDriver in -f", []string{"--endpoint", sock, "-f", noDriver}, session.ExitUsage, "no CSIDriver object"},
		{"CSIDriver of another driver", []string{"--endpoint", sock, "-f", other}, session.ExitUsage, `no CSIDriver named "drv.example.com", the name the driver registers (GetPluginInfo); given: other.example.com`},
		{"missing socket", []string{"--endpoint", filepath.Join(dir, "nope.sock")}, session.ExitEnvironment, "no such file or directory"},
		{"not a socket", []string{"--endpoint", noDriver}, session.ExitEnvironment, "not a unix socket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := conformanceCLI(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.want)
			}
		})
	}
}

// A socket file nobody listens on: the driver is not running.
func TestConformanceUnreachable(t *testing.T) {
	dir, err := os.MkdirTemp("", "conf-cmd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "dead.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	_, stderr, code := conformanceCLI(t, "--endpoint", "unix://"+sock, "--timeout", "5s")
	if code != session.ExitEnvironment || !strings.Contains(stderr, "the driver does not answer") {
		t.Errorf("exit %d, stderr %q; want %d and 'the driver does not answer'", code, stderr, session.ExitEnvironment)
	}
}

func TestConformanceRegistrationOnly(t *testing.T) {
	sock, dir := serveDriver(t, identityDriver("drv.example.com", map[string]string{"topology.example.com/zone": "zone-a"}))
	root := filepath.Join(dir, "root", "sub")
	junit := filepath.Join(dir, "out.xml")
	stdout, stderr, code := conformanceCLI(t, "--endpoint", sock, "--focus", "^(registration|timing)/", "--root-dir", root, "--junit", junit, "--node-name", "n1")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"csi-kubelet-sim conformance: driver drv.example.com 9.9.9",
		"CSIDriver   none given",
		"controller  no controller service",
		"PASS  registration/node-info",
		"PASS  timing/half-timeout",
		"20 not selected by --focus/--skip",
		"result      PASS",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "root")); !os.IsNotExist(err) {
		t.Errorf("the root dir (and the parent made for it) should be removed: %v", err)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suite struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("junit: %v\n%s", err, data)
	}
	if doc.Suite.Name != "csi-kubelet-sim conformance" || len(doc.Suite.Cases) != 2 || doc.Suite.Cases[0].Name != "registration/node-info" {
		t.Errorf("junit: %+v", doc)
	}
}

func TestConformanceJSON(t *testing.T) {
	sock, _ := serveDriver(t, identityDriver("drv.example.com", map[string]string{"Bad Key": "v"}))
	stdout, stderr, code := conformanceCLI(t, "--endpoint", sock, "--focus", "registration", "-o", "json")
	if code != session.ExitFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, session.ExitFailed, stdout, stderr)
	}
	if !strings.Contains(stderr, "1 of 1 scenarios failed") {
		t.Errorf("stderr %q", stderr)
	}
	var objs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", sc.Text(), err)
		}
		objs = append(objs, m)
	}
	if len(objs) != 2 || objs[0]["kind"] != "scenario" || objs[1]["kind"] != "summary" {
		t.Fatalf("want one scenario and a summary, got %v", objs)
	}
	s := objs[0]
	if s["name"] != "registration/node-info" || s["status"] != "fail" || !strings.Contains(s["message"].(string), `topology key "Bad Key"`) {
		t.Errorf("scenario %v", s)
	}
	f := s["failures"].([]any)[0].(map[string]any)
	if f["section"] != "13" || !strings.Contains(f["needed"].(string), "Node's labels") {
		t.Errorf("failure %v", f)
	}
	sum := objs[1]
	if sum["failed"] != 1.0 || sum["result"] != "FAILED" || sum["csidriver"] != nil || sum["not_selected"] != 21.0 {
		t.Errorf("summary %v", sum)
	}
}

func writeTestFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The CSIDriver is loaded as the release's API server stores it: before
// 1.35 (CSIServiceAccountTokenSecrets off) serviceAccountTokenInSecrets is
// dropped, so the kubelet puts the tokens in volume_context and the tokens
// scenario checks volume_context; from 1.35 they go to secrets.
func TestConformanceTokensByRelease(t *testing.T) {
	const allFields = "../../fixtures/samples/csidriver-all-fields.yaml"
	tests := []struct {
		version, gates string
		inSecrets      bool
	}{
		{"1.33", "", false},
		{"1.34", "", false},
		{"1.35", "", true},
		{"1.35", "CSIServiceAccountTokenSecrets=false", false},
		{"1.37", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.version+"/"+tt.gates, func(t *testing.T) {
			// A driver that publishes (a plain directory, no mount).
			d := identityDriver("ref.csi.kubelet-sim.io", nil)
			d.Update(func(c *csifake.Config) { c.ManageTargets = true })
			sock, _ := serveDriver(t, d)
			args := []string{"--endpoint", sock, "-f", allFields, "--kubelet-version", tt.version, "--focus", "^tokens/", "--node-name", "n1"}
			if tt.gates != "" {
				args = append(args, "--feature-gates", tt.gates)
			}
			stdout, stderr, code := conformanceCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			ran, skipped := "PASS  tokens/volume-context", "SKIP  tokens/secrets"
			if tt.inSecrets {
				ran, skipped = "PASS  tokens/secrets", "SKIP  tokens/volume-context"
			}
			for _, want := range []string{ran, skipped} {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout does not contain %q:\n%s", want, stdout)
				}
			}
			published := d.CallsOf("NodePublishVolume")
			if len(published) == 0 {
				t.Fatal("no NodePublishVolume")
			}
			for _, c := range published {
				req := c.Request.(*csi.NodePublishVolumeRequest)
				_, inContext := req.GetVolumeContext()[csiclient.TokensKey]
				_, inSecrets := req.GetSecrets()[csiclient.TokensKey]
				if inContext == tt.inSecrets || inSecrets != tt.inSecrets {
					t.Errorf("NodePublishVolume: tokens in volume_context %t, in secrets %t; want in secrets %t", inContext, inSecrets, tt.inSecrets)
				}
			}
		})
	}
}

// The header names the file the CSIDriver object came from, not every -f
// (with --apiserver the input also holds CRDs, RBAC and custom resources).
func TestConformanceHeaderNamesCSIDriverFile(t *testing.T) {
	sock, dir := serveDriver(t, identityDriver("drv.example.com", nil))
	sa := writeTestFile(t, dir, "rbac.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: drv\n  namespace: kube-system\n")
	obj := writeTestFile(t, dir, "csidriver.yaml", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: drv.example.com\nspec:\n  attachRequired: false\n")
	stdout, stderr, code := conformanceCLI(t, "--endpoint", sock, "-f", sa, "-f", obj, "--focus", "^registration/", "--node-name", "n1")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if want := "CSIDriver   drv.example.com from " + obj + ": "; !strings.Contains(stdout, want) {
		t.Errorf("stdout does not contain %q:\n%s", want, stdout)
	}
}
