package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Output a driver controls is data (docs/safety.md): what a
// driver says reaches the terminal, the CI log and JUnit with its control
// characters escaped, and with every secret and token the simulator handed
// it redacted, even when the driver echoes its request in an error.

// echoCase is a run against a driver that echoes one call's request.
type echoCase struct {
	name    string
	sample  string
	fault   string
	secrets []string // values handed to the driver in that request
}

var echoCases = []echoCase{
	// fixtures/samples/secrets: the stage and publish Secrets' values.
	{"stage-secrets", "secrets", "NodeStageVolume=echo", []string{"s3cr3t-stage"}},
	{"publish-secrets", "secrets", "NodePublishVolume=echo", []string{"publish-secret"}},
	// fixtures/samples/tokens: the tokens in NodePublish secrets; every
	// JWT starts with eyJ.
	{"tokens", "tokens", "NodePublishVolume=echo", []string{"eyJ"}},
}

// TestDriverEchoesSecrets: the driver fails the call quoting its whole
// request (protojson and Go's form). Neither stdout, stderr nor the JUnit
// file holds a secret value or a token, in text and JSON; with
// --show-secrets they do (the check can fail).
func TestDriverEchoesSecrets(t *testing.T) {
	for _, ec := range echoCases {
		for _, mode := range []string{"text", "json", "show"} {
			t.Run(ec.name+"/"+mode, func(t *testing.T) {
				work := workDir(t)
				drv := startRefDriver(t, work, "--fault", ec.fault)
				root := filepath.Join(work, "root")
				junit := filepath.Join(work, "run.xml")
				args := []string{"run", "-f", sample(t, ec.sample), "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
					"--node-name", simNode, "--junit", junit, "-v"}
				switch mode {
				case "json":
					args = append(args, "-o", "json")
				case "show":
					args = append(args, "--show-secrets")
				}
				r := runSim(t, args...)
				wantCode(t, r, 1)
				if !strings.Contains(r.Stderr, "the request was") {
					t.Fatalf("the driver's echo is not in the error\n%s", r)
				}
				assertNothingLeft(t, root, work)
				outputs := map[string]string{"stdout": r.Stdout, "stderr": r.Stderr, "junit": readFile(junit)}
				for where, text := range outputs {
					for _, v := range ec.secrets {
						if got := strings.Contains(text, v); got != (mode == "show") {
							t.Errorf("%s holds %q: %v, want %v", where, v, got, mode == "show")
						}
					}
				}
				if mode != "show" && !strings.Contains(r.Stderr, "***stripped***") {
					t.Errorf("stderr does not show the redaction marker where the secret was\n%s", r.Stderr)
				}
			})
		}
	}
}

// rawControls are bytes a terminal acts on that must never reach it.
var rawControls = []string{"\x1b", "\x07", "\r", "\u009b", "\u202e"}

func assertNoRawControls(t *testing.T, where, text string) {
	t.Helper()
	for _, c := range rawControls {
		if strings.Contains(text, c) {
			t.Errorf("%s holds the raw control %q", where, c)
		}
	}
}

// TestDriverEscapes: a driver whose vendor_version, node_id and error
// message are full of terminal escapes (OSC title, screen clear, CR, C1,
// bidi override): stdout, stderr and the JUnit file hold them escaped
// (\x1b), never raw, in text and JSON; conformance's output and JUnit too.
func TestDriverEscapes(t *testing.T) {
	const evil = "1.0\x1b]0;pwned\x07\r\u009b2J\u202e"
	for _, mode := range []string{"text", "json"} {
		t.Run("run/"+mode, func(t *testing.T) {
			work := workDir(t)
			drv := startRefDriver(t, work, "--fault", "NodePublishVolume=escape", "--vendor-version", evil)
			root := filepath.Join(work, "root")
			junit := filepath.Join(work, "run.xml")
			args := []string{"run", "-f", sample(t, "staged"), "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--junit", junit}
			if mode == "json" {
				args = append(args, "-o", "json")
			}
			r := runSim(t, args...)
			wantCode(t, r, 1)
			oneLineError(t, r)
			assertNothingLeft(t, root, work)
			for where, text := range map[string]string{"stdout": r.Stdout, "stderr": r.Stderr, "junit": readFile(junit)} {
				assertNoRawControls(t, where, text)
			}
			if !strings.Contains(r.Stderr, `\x1b]0;pwned\x07title`) {
				t.Errorf("stderr does not show the driver's message escaped\n%s", r.Stderr)
			}
			if mode == "json" {
				parseTrace(t, r) // still JSON, line by line
			}
		})
	}
	t.Run("conformance", func(t *testing.T) {
		work := workDir(t)
		drv := startRefDriver(t, work, "--fault", "NodePublishVolume=escape", "--vendor-version", evil)
		c := runConformance(t, work, drv.Sock, "--focus", "^lifecycle/persistent$")
		wantCode(t, c.sim, 1)
		junit, err := os.ReadFile(filepath.Join(work, "junit.xml"))
		if err != nil {
			t.Fatal(err)
		}
		for where, text := range map[string]string{"stdout": c.sim.Stdout, "stderr": c.sim.Stderr, "junit": string(junit)} {
			assertNoRawControls(t, where, text)
		}
		if !strings.Contains(string(junit), `\x1b]0;pwned\x07title`) {
			t.Errorf("the JUnit file does not quote the driver's message escaped\n%s", junit)
		}
	})
}
