package e2e

// With --apiserver the tokens come from the API server's TokenRequest API
// (issue 32): the trace shows each TokenRequest the kubelet makes and the
// API server's answer, at the default verbosity, the token as its
// fingerprint. docs/kubelet.md §4.1: one request per tokenRequests entry,
// bound to the pod, cached by the kubelet's token manager (a republish
// asks again only near expiry).

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	tokenRequestRe = regexp.MustCompile(`\[kubelet TokenRequest\] POST /api/v1/namespaces/default/serviceaccounts/vault-reader/token: audiences (.*), expirationSeconds (.*), bound to Pod default/secrets-consumer \(uid [0-9a-f-]{36}\)\n`)
	tokenAnswerRe  = regexp.MustCompile(`\[kubelet TokenRequest\] API server: 201 Created, expirationTimestamp 20[0-9T:-]+Z, token <token sha256:[0-9a-f]{8}> \(valid 1h0m0s\), sub system:serviceaccount:default:vault-reader, pod default/secrets-consumer, node ` + simNode + ` \(uid [0-9a-f-]{36}\)\n`)
)

func TestAPIServerTokenRequestsTraced(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	r := runSim(t, "run", "--apiserver", "-f", sample(t, "tokens"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"--hold", "2s", "--republish-period", "500ms")
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
	reqs := tokenRequestRe.FindAllStringSubmatch(r.Stdout, -1)
	answers := tokenAnswerRe.FindAllString(r.Stdout, -1)
	// Two tokenRequests entries: two requests, each answered; the
	// republishes take them from the kubelet's cache.
	if len(reqs) != 2 || len(answers) != 2 {
		t.Fatalf("want 2 TokenRequests and 2 answers, got %d and %d\n%s", len(reqs), len(answers), r)
	}
	got := map[string]string{}
	for _, m := range reqs {
		got[m[1]] = m[2]
	}
	if got["[vault]"] != "3600" || got["[] (the API server's audiences)"] != "unset (the API server's default)" {
		t.Errorf("requests %q: want audience vault with expirationSeconds 3600 and the empty audience unset", got)
	}
	if strings.Count(r.Stdout, " NodePublishVolume ") < 2 {
		t.Errorf("want republishes too (requiresRepublish, --hold)\n%s", r.Stdout)
	}
	if m := jwtRe.FindString(r.Stdout + r.Stderr); m != "" {
		t.Errorf("a token in the output: %.40s...", m)
	}
	// The requests come before the publish that carries the tokens.
	if i, j := strings.Index(r.Stdout, "[kubelet TokenRequest]"), strings.Index(r.Stdout, "NodePublishVolume "); i < 0 || j < i {
		t.Errorf("the TokenRequests should precede NodePublishVolume\n%s", r.Stdout)
	}
}
