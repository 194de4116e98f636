package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A driver that echoes the secrets it got in disguise, or puts one in its
// vendor_version or node_id (the reference driver's faults echo-encoded
// and leak): no output format prints a secret in any of its forms
// (docs/safety.md: what is scrubbed); --show-secrets does.

// disguiseSecrets are the secrets sample's values (fixtures/samples/secrets).
var disguiseSecrets = []string{"s3cr3t-stage", "publish-secret"}

// secretNeedles are the texts whose presence in an output shows secret v:
// as is and upper case, hex, the base64 characters only v decides (alone
// and after 1 or 2 bytes of other text, in both alphabets), and v split by
// a line break as each output writes the break.
func secretNeedles(v string) []string {
	b := []byte(v)
	h := hex.EncodeToString(b)
	needles := []string{v, strings.ToUpper(v), h, strings.ToUpper(h)}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for lead := range 3 {
			s := enc.EncodeToString(append(make([]byte, lead), b...))
			first := (8*lead + 5) / 6
			needles = append(needles, s[first:first+12])
		}
	}
	half := len(v) / 2
	for _, br := range []string{"\n", `\n`, `\\n`, `\x0a`, "&#xA;", "&#10;"} {
		needles = append(needles, v[:half]+br+v[half:])
	}
	return needles
}

// assertNoSecret fails if text shows one of the secrets in any form.
func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, v := range disguiseSecrets {
		for _, n := range secretNeedles(v) {
			if strings.Contains(text, n) {
				t.Errorf("%s shows secret %q as %q", where, v, n)
			}
		}
	}
}

// outputModes are the -o forms a run is checked in: each renders every
// string of every record ({@}, {{.}}).
var outputModes = map[string][]string{
	"text":        nil,
	"json":        {"-o", "json"},
	"yaml":        {"-o", "yaml"},
	"jsonpath":    {"-o", "jsonpath={@}"},
	"go-template": {"-o", "go-template={{.}}"},
}

// TestDriverEchoesSecretsInDisguise: the driver answers GetPluginInfo and
// NodeGetInfo with a secret in every form (before any request carried
// one), and fails NodeStageVolume or NodePublishVolume echoing the
// request's secrets in every form. stdout, stderr, JUnit and the HTML
// report show none of them, in every output format; with --show-secrets
// the plain values are printed (the check can fail).
func TestDriverEchoesSecretsInDisguise(t *testing.T) {
	for _, call := range []string{"NodeStageVolume", "NodePublishVolume"} {
		for mode, oargs := range outputModes {
			t.Run(call+"/"+mode, func(t *testing.T) {
				r, files := runDisguised(t, call, oargs)
				if !strings.Contains(r.Stderr, "the secrets were") {
					t.Fatalf("the driver's echo is not in the error\n%s", r)
				}
				assertNoSecret(t, "stdout", r.Stdout)
				assertNoSecret(t, "stderr", r.Stderr)
				for name, text := range files {
					assertNoSecret(t, name, text)
				}
				if !strings.Contains(r.Stdout+r.Stderr, "***stripped***") {
					t.Errorf("no redaction marker where the secrets were\n%s", r)
				}
			})
		}
	}
	t.Run("show-secrets", func(t *testing.T) {
		r, files := runDisguised(t, "NodePublishVolume", []string{"--show-secrets"})
		all := r.Stdout + r.Stderr + files["junit"]
		for _, v := range disguiseSecrets {
			if !strings.Contains(all, v) {
				t.Errorf("--show-secrets: %q not printed\n%s", v, r)
			}
		}
	})
}

// runDisguised runs the secrets sample against a driver with the
// disguising faults (call fails with echo-encoded), with --junit and
// --report; it returns the run and those files' texts.
func runDisguised(t *testing.T, call string, extra []string) (simResult, map[string]string) {
	t.Helper()
	work := workDir(t)
	drv := startRefDriver(t, work, "--fault", "GetPluginInfo=leak:s3cr3t-stage", "--fault", "NodeGetInfo=leak:publish-secret",
		"--fault", call+"=echo-encoded")
	root := filepath.Join(work, "root")
	junit := filepath.Join(work, "run.xml")
	report := filepath.Join(work, "run.html")
	args := append([]string{"run", "-f", sample(t, "secrets"), "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--junit", junit, "--report", report, "-v"}, extra...)
	r := runSim(t, args...)
	wantCode(t, r, 1)
	assertNothingLeft(t, root, work)
	return r, map[string]string{"junit": readFile(junit), "report": readFile(report)}
}

// TestDriverEscapesInTemplates: the escape fault's message and a
// vendor_version full of controls, printed through -o jsonpath,
// go-template and yaml, and in the HTML report and JUnit: no raw ESC, BEL,
// CR, C1 or bidi override; the message is there, escaped.
func TestDriverEscapesInTemplates(t *testing.T) {
	const evil = "1.0\x1b]0;pwned\x07\r\u009b2J\u202e\u2066"
	for _, mode := range []string{"yaml", "jsonpath", "go-template", "text"} {
		t.Run(mode, func(t *testing.T) {
			work := workDir(t)
			drv := startRefDriver(t, work, "--fault", "NodePublishVolume=escape", "--vendor-version", evil)
			root := filepath.Join(work, "root")
			junit := filepath.Join(work, "run.xml")
			report := filepath.Join(work, "run.html")
			args := append([]string{"run", "-f", sample(t, "staged"), "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--junit", junit, "--report", report}, outputModes[mode]...)
			r := runSim(t, args...)
			wantCode(t, r, 1)
			assertNothingLeft(t, root, work)
			html := readFile(report)
			for where, text := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr, "junit": readFile(junit), "report": html} {
				assertNoRawControls(t, where, text)
				assertNoRawControls(t, where+" (U+2066)", strings.ReplaceAll(text, "\u2066", "\u202e"))
			}
			// jsonpath's {@} prints a record as JSON: \x1b there is \\x1b.
			if !strings.Contains(strings.ReplaceAll(r.Stdout, `\\`, `\`), `\x1b]0;pwned\x07title`) {
				t.Errorf("stdout does not show the driver's message escaped\n%s", r.Stdout)
			}
			if !strings.Contains(html, `\x1b]0;pwned\x07title`) {
				t.Errorf("the report does not show the driver's message escaped")
			}
		})
	}
}

// TestDriverBigError: a driver error of 12 MiB (the fault big) in a run
// with JUnit and the HTML report, in text and JSON: each output stays
// under 1 MiB, and says how long the message was.
func TestDriverBigError(t *testing.T) {
	mark := regexp.MustCompile(`\.\.\. \(([0-9]+) bytes, cut\)`)
	for mode, oargs := range map[string][]string{"text": nil, "json": {"-o", "json"}} {
		t.Run(mode, func(t *testing.T) {
			work := workDir(t)
			drv := startRefDriver(t, work, "--fault", "NodePublishVolume=big")
			root := filepath.Join(work, "root")
			junit := filepath.Join(work, "run.xml")
			report := filepath.Join(work, "run.html")
			args := append([]string{"run", "-f", sample(t, "secrets"), "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--junit", junit, "--report", report, "-v"}, oargs...)
			r := runSim(t, args...)
			wantCode(t, r, 1)
			assertNothingLeft(t, root, work)
			outputs := map[string]string{"stdout": r.Stdout, "stderr": r.Stderr, "junit": readFile(junit), "report": readFile(report)}
			for where, text := range outputs {
				if len(text) > 1<<20 {
					t.Errorf("%s is %d bytes", where, len(text))
				}
				assertNoSecret(t, where, text)
			}
			// The cut field is the driver's message with the words
			// before it ("rpc error: code = Internal desc = "), its secrets
			// (at its start) replaced by the shorter marker.
			for _, where := range []string{"stdout", "stderr", "junit", "report"} {
				m := mark.FindStringSubmatch(outputs[where])
				if n, _ := strconv.Atoi(append(m, "", "")[1]); n < 12_000_000 {
					t.Errorf("%s does not say the message was cut with its length: %q", where, m)
				}
			}
			if len(r.Stderr) > 64<<10 {
				t.Errorf("stderr is %d bytes", len(r.Stderr))
			}
			if _, err := os.Stat(report); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestBigVolumeID: a volume handle of 900 KiB (the staged sample's, which
// the reference driver refuses quoting it; a 1 MiB one would not fit a
// journal record and is refused before any call) is in every call and
// step of the run; each output stays under 256 KiB.
func TestBigVolumeID(t *testing.T) {
	staged, err := os.ReadFile(filepath.Join(sample(t, "staged"), "staged.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for mode, oargs := range map[string][]string{"text": nil, "json": {"-o", "json"}, "yaml": {"-o", "yaml"}} {
		t.Run(mode, func(t *testing.T) {
			work := workDir(t)
			in := writeFile(t, work, "big.yaml", strings.Replace(string(staged), "vol-data-1", strings.Repeat("v", 900<<10), 1))
			drv := startRefDriver(t, work)
			root := filepath.Join(work, "root")
			junit := filepath.Join(work, "run.xml")
			report := filepath.Join(work, "run.html")
			r := runSim(t, append([]string{"run", "-f", in, "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--junit", junit, "--report", report, "-v"}, oargs...)...)
			if r.Code == 0 {
				t.Fatalf("the driver took a volume ID of 1 MiB\n%.2000s", r.Stderr)
			}
			assertNothingLeft(t, root, work)
			for where, text := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr, "junit": readFile(junit), "report": readFile(report)} {
				if len(text) > 256<<10 {
					t.Errorf("%s is %d bytes", where, len(text))
				}
			}
			if m := regexp.MustCompile(`\((\d+) bytes, cut\)`).FindStringSubmatch(r.Stderr); m == nil || atoi(m[1]) < 900<<10 {
				t.Errorf("stderr does not say how long the cut text was\n%.500s", r.Stderr)
			}
		})
	}
}

// TestConformanceEscapesInTemplates: conformance against a driver whose
// vendor_version and publish error are full of controls, printed through
// -o go-template and jsonpath, with JUnit and the HTML report: no raw
// control anywhere.
func TestConformanceEscapesInTemplates(t *testing.T) {
	const evil = "1.0\x1b]0;pwned\x07\r\u009b2J\u202e"
	for _, o := range []string{"go-template={{.}}", "jsonpath={@}"} {
		t.Run(strings.Split(o, "=")[0], func(t *testing.T) {
			work := workDir(t)
			drv := startRefDriver(t, work, "--fault", "NodePublishVolume=escape", "--vendor-version", evil)
			junit := filepath.Join(work, "junit.xml")
			report := filepath.Join(work, "conformance.html")
			r := runSim(t, "conformance", "--endpoint", "unix://"+drv.Sock, "--root-dir", filepath.Join(work, "root"), "--node-name", simNode,
				"-o", o, "--junit", junit, "--report", report, "--focus", "^lifecycle/persistent$")
			wantCode(t, r, 1)
			html := readFile(report)
			for where, text := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr, "junit": readFile(junit), "report": html} {
				assertNoRawControls(t, where, text)
			}
			if !strings.Contains(html, `\x1b]0;pwned\x07title`) {
				t.Errorf("the report does not show the driver's message escaped")
			}
		})
	}
}

// atoi is s as a number, -1 when it is none.
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}
