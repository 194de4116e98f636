package e2e

// `tokens claims` (issue 32): the claims of the tokens a run handed the
// driver, read back from the run's -o json output, which redacts the
// tokens themselves. Expected values are the sample's objects
// (fixtures/samples/tokens) and docs/kubelet.md §4 (a token per
// tokenRequests entry, bound to the pod, its node in kubernetes.io.node).

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	tokSamplePod   = "default/secrets-consumer"
	tokSamplePodID = "9a3c3c6e-5555-4d2b-9c51-0e2f8d1a7b05"
	tokSampleSAID  = "3f1e0c4a-5555-4d2b-9c51-0e2f8d1a7b05"
)

var jwtRe = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// sentFingerprints are the fingerprints the NodePublishVolume calls of a
// trace show for the tokens, by audience.
func sentFingerprints(t *testing.T, lines []traceLine) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, c := range calls(lines) {
		if c.Method != "NodePublishVolume" {
			continue
		}
		secrets, _ := c.Request["secrets"].(map[string]any)
		val, _ := secrets[tokensKey].(string)
		var m map[string]struct {
			Token string `json:"token"`
		}
		if err := json.Unmarshal([]byte(val), &m); err != nil {
			t.Fatalf("NodePublishVolume secrets[%s] = %q: %v", tokensKey, val, err)
		}
		for aud, v := range m {
			out[aud+" "+v.Token] = true
		}
	}
	return out
}

// TestTokensClaims: `run -o json` keeps the tokens out and their claims
// in; `tokens claims` shows them per publish, with the fingerprints the
// calls show; a --show-secrets trace without the claims records is
// decoded from the calls; an input without tokens exits 2.
func TestTokensClaims(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	r := runSim(t, "run", "-f", sample(t, "tokens"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "-o", "json")
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)
	if m := jwtRe.FindString(r.Stdout); m != "" {
		t.Fatalf("a token in the run's output without --show-secrets: %.40s...", m)
	}
	run := writeFile(t, work, "run.jsonl", r.Stdout)

	c := runSim(t, "tokens", "claims", run)
	wantCode(t, c, 0)
	if jwtRe.MatchString(c.Stdout) {
		t.Errorf("tokens claims printed a token:\n%s", c.Stdout)
	}
	// One block per token: a header line, then its rows.
	blocks := strings.Split(strings.TrimSpace(c.Stdout), "\n"+tokSamplePod)
	sent := sentFingerprints(t, parseTrace(t, r))
	if len(blocks) < 2 || len(sent) != 2 {
		t.Fatalf("want a block per token of each publish (2 audiences), sent %v, got:\n%s", sent, c.Stdout)
	}
	for i, b := range blocks {
		if i > 0 {
			b = tokSamplePod + b
		}
		head, rows, _ := strings.Cut(b, "\n")
		if !strings.HasPrefix(head, tokSamplePod+" volume secrets-store, ") {
			t.Errorf("block %d names %q", i, head)
		}
		aud := "vault"
		if strings.Contains(head, `audience ""`) {
			aud = ""
		}
		fp := head[strings.LastIndex(head, "<token sha256:"):]
		if !sent[aud+" "+fp] {
			t.Errorf("block %d: audience %q fingerprint %s is not one the calls sent (%v)", i, aud, fp, sent)
		}
		for _, want := range []string{
			"sub             system:serviceaccount:default:vault-reader",
			"pod             " + tokSamplePod + " (uid " + tokSamplePodID + ")",
			"node            " + simNode + " (uid ",
			"serviceaccount  default/vault-reader (uid " + tokSampleSAID + ")",
			"iat             20", "nbf             20",
		} {
			if !strings.Contains(rows, want) {
				t.Errorf("block %d (audience %q) lacks %q:\n%s", i, aud, want, b)
			}
		}
		if aud == "vault" && (!strings.Contains(rows, "aud             vault\n") || !strings.Contains(rows, "(1h0m0s after iat)")) {
			t.Errorf("the vault token: aud vault, exp 3600s after iat (its expirationSeconds):\n%s", b)
		}
	}

	// A --show-secrets trace, its claims records taken out: decoded from
	// the calls, the same tokens.
	shown := runSim(t, "run", "-f", sample(t, "tokens"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "-o", "json", "--show-secrets")
	wantCode(t, shown, 0)
	var kept []string
	for _, l := range strings.Split(shown.Stdout, "\n") {
		if !strings.Contains(l, `"kind":"token"`) {
			kept = append(kept, l)
		}
	}
	fromCalls := runSim(t, "tokens", "claims", "-o", "json", writeFile(t, work, "shown.jsonl", strings.Join(kept, "\n")))
	wantCode(t, fromCalls, 0)
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(fromCalls.Stdout), "\n") {
		var tok struct {
			Pod    string `json:"pod"`
			Claims struct {
				Sub string `json:"sub"`
			} `json:"claims"`
			Times map[string]string `json:"times"`
		}
		if err := json.Unmarshal([]byte(l), &tok); err != nil || tok.Pod != tokSamplePod || tok.Claims.Sub != "system:serviceaccount:default:vault-reader" || tok.Times["exp"] == "" {
			t.Errorf("token %q (%v)", l, err)
		}
		n++
	}
	if n < 2 || jwtRe.MatchString(fromCalls.Stdout) {
		t.Errorf("want the tokens of the calls, decoded, no token itself:\n%s", fromCalls.Stdout)
	}

	// No token: exit 2, saying so.
	none := runSim(t, "run", "-f", sample(t, "inline"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "-o", "json")
	wantCode(t, none, 0)
	empty := runSim(t, "tokens", "claims", writeFile(t, work, "none.jsonl", none.Stdout))
	wantCode(t, empty, 2)
	if !strings.Contains(empty.Stderr, "no token in") {
		t.Errorf("%s", empty)
	}
	// Text output is not the input it reads.
	text := runSim(t, "tokens", "claims", writeFile(t, work, "text.txt", "csi-kubelet-sim run: kubelet 1.37\n"))
	wantCode(t, text, 2)
	if !strings.Contains(text.Stderr, "text.txt line 1: not a JSON record") {
		t.Errorf("%s", text)
	}
}
