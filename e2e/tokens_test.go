package e2e

// End-to-end tests of the service-account token flow (issue 3): what the
// simulated API server issues for a CSIDriver's tokenRequests, where the
// simulated kubelet puts it in NodePublishVolume, how a driver verifies it
// against the served JWKS, and that the trace never prints it.
//
// Every expected value comes from docs/kubelet.md (section named
// next to each check); the tokens themselves are read from the Kubernetes
// e2e mock driver's gRPCCall log (secrets in the clear) and verified with
// github.com/go-jose/go-jose/v4, not with the simulator's own code.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/mocklog"
)

const (
	tokensKey = "csi.storage.k8s.io/serviceAccount.tokens" // docs/kubelet.md §3, §4.3
	tokPodUID = "70c0e2e5-0000-4000-8000-00000000a001"
	tokSAUID  = "5a5a5a5a-0000-4000-8000-00000000a002"
	tokNS     = "team"
	tokPod    = "app"
	tokSA     = "vault-reader"
	tokPV     = "pv-tok"

	// The CSIDriver tokenRequests of most tests: an explicit audience with
	// an explicit expiration, and the empty audience with none (docs/kubelet.md §4.1).
	tokRequests = "  tokenRequests:\n    - audience: vault\n      expirationSeconds: 3600\n    - audience: \"\"\n"
)

// ---------------------------------------------------------------------------
// Manifests

// tokSetup describes one set of manifests: a CSIDriver for the mock, a PV
// (mock volume id) bound to claim team/data, and pod team/app using it.
type tokSetup struct {
	driverSpec    string // lines of the CSIDriver spec, indented two spaces
	saName        string // pod spec.serviceAccountName; "" leaves it unset
	saUID         string // when set, a ServiceAccount object team/<saName> with this UID
	publishSecret bool   // PV nodePublishSecretRef -> Secret team/publish-creds {user: alice}
	pvAttrs       string // lines of the PV's csi.volumeAttributes, indented six spaces
	handle        string // PV volumeHandle; "" = "1"
}

func (s tokSetup) manifests() string {
	handle := s.handle
	if handle == "" {
		handle = "1"
	}
	var docs []string
	docs = append(docs, fmt.Sprintf("apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: %s\nspec:\n%s", mockDriver, s.driverSpec))
	if s.saUID != "" {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: %s\n  namespace: %s\n  uid: %s\n", s.saName, tokNS, s.saUID))
	}
	csiExtra := ""
	if s.publishSecret {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: publish-creds\n  namespace: %s\nstringData:\n  user: alice\n", tokNS))
		csiExtra += fmt.Sprintf("    nodePublishSecretRef:\n      name: publish-creds\n      namespace: %s\n", tokNS)
	}
	if s.pvAttrs != "" {
		csiExtra += "    volumeAttributes:\n" + s.pvAttrs
	}
	docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  claimRef:
    namespace: %s
    name: data
  csi:
    driver: %s
    volumeHandle: %q
%s`, tokPV, tokNS, mockDriver, handle, csiExtra))
	docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: %s
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
  volumeName: %s
`, tokNS, tokPV))
	sa := ""
	if s.saName != "" {
		sa = "  serviceAccountName: " + s.saName + "\n"
	}
	docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  uid: %s
spec:
  nodeName: %s
%s  containers:
    - name: app
      image: registry.k8s.io/pause:3.10
      volumeMounts:
        - name: data
          mountPath: /data
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: data
`, tokPod, tokNS, tokPodUID, simNode, sa))
	return strings.Join(docs, "---\n")
}

// tokPodInfo is docs/kubelet.md §3's five pod-info keys for pod team/app (a PV, so
// ephemeral "false").
func tokPodInfo(sa string) obj {
	return podInfo(tokPod, tokNS, tokPodUID, sa, false)
}

// ---------------------------------------------------------------------------
// Runs

// tokKeygen writes a key pair with `tokens keygen` and returns the private
// and public key files.
func tokKeygen(t *testing.T, work, typ string) (priv, pub string) {
	t.Helper()
	priv = filepath.Join(work, "sa-"+typ+".key")
	pub = filepath.Join(work, "sa-"+typ+".pub")
	r := runSim(t, "tokens", "keygen", "--type", typ, "--private-key", priv, "--public-key", pub)
	wantCode(t, r, 0)
	return priv, pub
}

// tokRunArgs is a run of the manifests against the mock with NodeGetVolumeStats
// off (so the call stream is deterministic).
func tokRunArgs(mf, sock, root string, extra ...string) []string {
	return append([]string{"run", "-f", mf, "--endpoint", "unix://" + sock, "--root-dir", root,
		"--node-name", simNode, "--volume-stats-agg-period", "0"}, extra...)
}

var oidcURLRe = regexp.MustCompile(`keys at (http://127\.0\.0\.1:[0-9]+)/openid/v1/jwks`)

// oidcBase waits for the line naming the served URLs (the first line of the
// text output, or a {"kind":"info"} line of -o json) and returns the base URL.
func (s *bgSim) oidcBase(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if m := oidcURLRe.FindStringSubmatch(s.out.String()); m != nil {
			return m[1]
		}
		select {
		case <-s.exited:
			t.Fatalf("the simulator exited without naming the OIDC URLs; stdout:\n%s\nstderr:\n%s", s.out.String(), s.errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no OIDC URL line after 15s; stdout:\n%s", s.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readMockLog parses the mock's log as written so far (the driver keeps
// running).
func readMockLog(t *testing.T, d *driverProc) []mocklog.Call {
	t.Helper()
	f, err := os.Open(d.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cs, err := mocklog.Parse(f)
	if err != nil {
		// A line being written right now; the caller polls again.
		return cs[:0]
	}
	return cs
}

// waitMockCall polls the mock's log until it has recorded a successful call
// of method, and returns it.
func waitMockCall(t *testing.T, d *driverProc, s *bgSim, method string) mocklog.Call {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, c := range mocklog.Filter(readMockLog(t, d), method) {
			if c.OK() {
				return c
			}
		}
		select {
		case <-s.exited:
			t.Fatalf("the simulator exited before the mock recorded %s; stdout:\n%s\nstderr:\n%s\nmock log:\n%s",
				method, s.out.String(), s.errb.String(), readFile(d.Log))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mock recorded no %s after 20s; mock log:\n%s", method, readFile(d.Log))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// onePublish returns the single successful NodePublishVolume of the log.
func onePublish(t *testing.T, cs []mocklog.Call, mockLog string) mocklog.Call {
	t.Helper()
	ps := mocklog.Filter(cs, "NodePublishVolume")
	if len(ps) != 1 {
		t.Fatalf("want exactly one NodePublishVolume at the mock, got %d; methods %v\nmock log:\n%s", len(ps), mockMethods(cs), mockLog)
	}
	if !ps[0].OK() {
		t.Fatalf("NodePublishVolume failed at the mock: %s", ps[0].Error)
	}
	return ps[0]
}

// strMap turns a logged map (volume_context, secrets) into map[string]string;
// absent = empty.
func strMap(t *testing.T, v any) map[string]string {
	t.Helper()
	out := map[string]string{}
	if v == nil {
		return out
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not a JSON object: %#v", v)
	}
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("value of %q is not a string: %#v", k, x)
		}
		out[k] = s
	}
	return out
}

// ---------------------------------------------------------------------------
// The tokens JSON (docs/kubelet.md §4.3)

// tokStatus is authenticationv1.TokenRequestStatus as the kubelet marshals it.
type tokStatus struct {
	Token               string `json:"token"`
	ExpirationTimestamp string `json:"expirationTimestamp"`
}

var rfc3339WholeUTC = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$`)

// checkTokensJSON checks the value of the tokens key against docs/kubelet.md §4.3:
// exactly the audiences wantAud as keys, each {token, expirationTimestamp}
// with a whole-second UTC RFC 3339 time, byte for byte what encoding/json
// makes of map[string]TokenRequestStatus (sorted keys, field order, no
// whitespace). It returns the decoded map.
func checkTokensJSON(t *testing.T, val string, wantAud ...string) map[string]tokStatus {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(val))
	dec.DisallowUnknownFields()
	var m map[string]tokStatus
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("tokens value is not map[string]{token, expirationTimestamp} JSON (%v): %q", err, val)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("tokens value has trailing data: %q", val)
	}
	re, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(re) != val {
		t.Errorf("tokens JSON differs from encoding/json of map[string]TokenRequestStatus (docs/kubelet.md §4.3):\n got %s\nwant %s", val, re)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	want := append([]string{}, wantAud...)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tokens keys %q, want %q (one per tokenRequests audience, \"\" for the empty one)", got, want)
	}
	for aud, st := range m {
		if strings.Count(st.Token, ".") != 2 || !strings.HasPrefix(st.Token, "eyJ") {
			t.Errorf("audience %q: token is not a compact JWS: %q", aud, st.Token)
		}
		if !rfc3339WholeUTC.MatchString(st.ExpirationTimestamp) {
			t.Errorf("audience %q: expirationTimestamp %q is not whole-second RFC 3339 UTC (metav1.Time)", aud, st.ExpirationTimestamp)
		}
	}
	return m
}

// checkExpiry: expirationTimestamp = the API server's now + expirationSeconds
// (docs/kubelet.md §4.2, §4.3), with now within [before, after] truncated to seconds.
func checkExpiry(t *testing.T, aud string, st tokStatus, seconds int64, before, after time.Time) time.Time {
	t.Helper()
	exp, err := time.Parse(time.RFC3339, st.ExpirationTimestamp)
	if err != nil {
		t.Errorf("audience %q: expirationTimestamp %q: %v", aud, st.ExpirationTimestamp, err)
		return exp
	}
	lo := before.Truncate(time.Second).Add(time.Duration(seconds) * time.Second)
	hi := after.Add(time.Duration(seconds) * time.Second)
	if exp.Before(lo) || exp.After(hi) {
		t.Errorf("audience %q: expirationTimestamp %s, want now+%ds in [%s, %s]", aud, st.ExpirationTimestamp, seconds,
			lo.UTC().Format(time.RFC3339), hi.UTC().Format(time.RFC3339))
	}
	return exp
}

// ---------------------------------------------------------------------------
// 1. Where the tokens go (docs/kubelet.md §3, §4.3, §4.4)

func TestTokensInNodePublish(t *testing.T) {
	const noAttach = "  attachRequired: false\n"
	cases := []struct {
		name  string
		setup tokSetup
		// want builds the expected volume_context and secrets with the
		// tokens value given (so the rest is compared exactly).
		wantCtx     func(tok string) obj
		wantSecrets func(tok string) obj
		noTokens    bool
		auds        []string // the tokens keys; nil = "" and vault
		args        []string // extra run flags
		// mayReject: exit 2 with one line containing this is an acceptable
		// outcome too (an API server that does not know the field).
		mayReject string
	}{
		{
			// 4.4: unset -> volume_context; the publish secret is untouched.
			name:        "unset-in-volume-context",
			setup:       tokSetup{driverSpec: noAttach + "  podInfoOnMount: true\n" + tokRequests, saName: tokSA, publishSecret: true},
			wantCtx:     func(tok string) obj { return merge(tokPodInfo(tokSA), obj{tokensKey: tok}) },
			wantSecrets: func(string) obj { return obj{"user": "alice"} },
		},
		{
			// 4.4: false behaves as unset.
			name: "false-in-volume-context",
			setup: tokSetup{driverSpec: noAttach + "  podInfoOnMount: true\n" + tokRequests + "  serviceAccountTokenInSecrets: false\n",
				saName: tokSA, publishSecret: true},
			wantCtx:     func(tok string) obj { return merge(tokPodInfo(tokSA), obj{tokensKey: tok}) },
			wantSecrets: func(string) obj { return obj{"user": "alice"} },
		},
		{
			// 4.4: true -> secrets, merged over the nodePublishSecretRef data;
			// not in volume_context.
			name: "true-in-secrets-merged",
			setup: tokSetup{driverSpec: noAttach + "  podInfoOnMount: true\n" + tokRequests + "  serviceAccountTokenInSecrets: true\n",
				saName: tokSA, publishSecret: true},
			wantCtx:     func(string) obj { return tokPodInfo(tokSA) },
			wantSecrets: func(tok string) obj { return obj{"user": "alice", tokensKey: tok} },
		},
		{
			// 4.4: true without a publish secret: secrets hold only the tokens.
			name: "true-in-secrets-alone",
			setup: tokSetup{driverSpec: noAttach + "  podInfoOnMount: false\n" + tokRequests + "  serviceAccountTokenInSecrets: true\n",
				saName: tokSA},
			wantCtx:     func(string) obj { return obj{} },
			wantSecrets: func(tok string) obj { return obj{tokensKey: tok} },
		},
		{
			// 3: no tokenRequests -> no tokens anywhere.
			name:        "no-token-requests",
			setup:       tokSetup{driverSpec: noAttach + "  podInfoOnMount: true\n", saName: tokSA, publishSecret: true},
			wantCtx:     func(string) obj { return tokPodInfo(tokSA) },
			wantSecrets: func(string) obj { return obj{"user": "alice"} },
			noTokens:    true,
		},
		{
			// 3: podInfoOnMount false does not stop the tokens (and adds no pod info).
			name:        "podinfo-off-still-tokens",
			setup:       tokSetup{driverSpec: noAttach + "  podInfoOnMount: false\n" + tokRequests, saName: tokSA},
			wantCtx:     func(tok string) obj { return obj{tokensKey: tok} },
			wantSecrets: func(string) obj { return obj{} },
		},
		{
			// 3: the kubelet's tokens overwrite a user attribute of the same
			// key in NodePublish; NodeStage gets the PV's attributes as they are.
			name: "overrides-user-attribute",
			setup: tokSetup{driverSpec: noAttach + "  podInfoOnMount: false\n" + tokRequests, saName: tokSA,
				pvAttrs: "      tier: gold\n      " + tokensKey + ": user-value\n"},
			wantCtx:     func(tok string) obj { return obj{"tier": "gold", tokensKey: tok} },
			wantSecrets: func(string) obj { return obj{} },
		},
		{
			// docs/kubelet.md §4.3 and §21.8: encoding/json escapes HTML characters in
			// the keys (an audience is any string).
			name: "html-audience",
			setup: tokSetup{driverSpec: noAttach + "  podInfoOnMount: false\n  tokenRequests:\n    - audience: \"https://vault.example/?a=1&b=<2>\"\n    - audience: \"\"\n",
				saName: tokSA},
			auds:        []string{"", "https://vault.example/?a=1&b=<2>"},
			wantCtx:     func(tok string) obj { return obj{tokensKey: tok} },
			wantSecrets: func(string) obj { return obj{} },
		},
		{
			// 4.4: 1.35, gate on by default (beta): secrets.
			name: "true-1.35-gate-on",
			setup: tokSetup{driverSpec: noAttach + "  podInfoOnMount: false\n" + tokRequests + "  serviceAccountTokenInSecrets: true\n",
				saName: tokSA},
			args:        []string{"--kubelet-version", "1.35"},
			wantCtx:     func(string) obj { return obj{} },
			wantSecrets: func(tok string) obj { return obj{tokensKey: tok} },
		},
		{
			// 4.4: with CSIServiceAccountTokenSecrets off, the API server's
			// CSIDriver strategy drops the field on create (the kubelet does
			// not check the gate), so the tokens go to volume_context.
			name: "true-1.35-gate-off",
			setup: tokSetup{driverSpec: noAttach + "  podInfoOnMount: false\n" + tokRequests + "  serviceAccountTokenInSecrets: true\n",
				saName: tokSA},
			args:        []string{"--kubelet-version", "1.35", "--feature-gates", "CSIServiceAccountTokenSecrets=false"},
			wantCtx:     func(tok string) obj { return obj{tokensKey: tok} },
			wantSecrets: func(string) obj { return obj{} },
		},
		{
			// 4.4 and 14.1: the field first appears in 1.35 (k8s.io/api
			// v0.35); a 1.34 cluster has no such field, so the driver never
			// gets tokens in secrets: either the field is dropped (tokens in
			// volume_context) or the object is refused as unknown.
			name: "true-1.34-no-field",
			setup: tokSetup{driverSpec: noAttach + "  podInfoOnMount: false\n" + tokRequests + "  serviceAccountTokenInSecrets: true\n",
				saName: tokSA},
			args:        []string{"--kubelet-version", "1.34"},
			wantCtx:     func(tok string) obj { return obj{tokensKey: tok} },
			wantSecrets: func(string) obj { return obj{} },
			mayReject:   "serviceAccountTokenInSecrets",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			mock := startMock(t, work, "--disable-attach")
			root := filepath.Join(work, "root")
			mf := writeFile(t, work, "manifests.yaml", tc.setup.manifests())

			before := time.Now()
			r := runSim(t, tokRunArgs(mf, mock.Sock, root, append([]string{"-o", "json"}, tc.args...)...)...)
			after := time.Now()
			cs := mockCalls(t, mock)
			if tc.mayReject != "" && r.Code == 2 {
				oneLineError(t, r, tc.mayReject)
				assertNothingLeft(t, root, work)
				return
			}
			if r.Code != 0 {
				t.Fatalf("exit %d, want 0\n%s\nmock log:\n%s", r.Code, r, readFile(mock.Log))
			}
			assertNothingLeft(t, root, work)

			pub := onePublish(t, cs, readFile(mock.Log))
			ctx := strMap(t, pub.Get("volume_context"))
			sec := strMap(t, pub.Get("secrets"))
			_, inCtx := ctx[tokensKey]
			_, inSec := sec[tokensKey]
			tok := ""
			switch {
			case tc.noTokens:
				if inCtx || inSec {
					t.Errorf("tokens key present without tokenRequests (volume_context %v, secrets %v)", inCtx, inSec)
				}
			case tc.wantSecrets("x")[tokensKey] != nil:
				if !inSec || inCtx {
					t.Errorf("serviceAccountTokenInSecrets true: tokens key in secrets %v (want true), in volume_context %v (want false)", inSec, inCtx)
				}
				tok = sec[tokensKey]
			default:
				if !inCtx || inSec {
					t.Errorf("tokens key in volume_context %v (want true), in secrets %v (want false)", inCtx, inSec)
				}
				tok = ctx[tokensKey]
			}
			if tok == "" && !tc.noTokens {
				// Misplaced: still check the rest against the value sent.
				tok = ctx[tokensKey] + sec[tokensKey]
			}
			if tok != "" && !tc.noTokens {
				auds := tc.auds
				if auds == nil {
					auds = []string{"", "vault"}
				}
				m := checkTokensJSON(t, tok, auds...)
				// 4.2: vault asks for 3600; the empty audience leaves it
				// nil, which the API server defaults to 3600.
				for _, aud := range auds {
					checkExpiry(t, aud, m[aud], 3600, before, after)
				}
				if m[auds[0]].Token == m[auds[1]].Token {
					t.Errorf("the two audiences got the same token")
				}
				if tc.auds != nil && !strings.Contains(tok, `"https://vault.example/?a=1\u0026b=\u003c2\u003e"`) {
					t.Errorf("the audience key is not HTML-escaped as encoding/json writes it: %s", tok)
				}
			}
			if ok, diff := jsonEqual(pub.Get("volume_context"), nilIfEmpty(tc.wantCtx(tok))); !ok {
				t.Errorf("NodePublishVolume volume_context:\n%s", diff)
			}
			if ok, diff := jsonEqual(pub.Get("secrets"), nilIfEmpty(tc.wantSecrets(tok))); !ok {
				t.Errorf("NodePublishVolume secrets:\n%s", diff)
			}

			// docs/kubelet.md §3 and §21.7: NodeStage gets only the PV's attributes, no
			// tokens and no pod info; no stage secret is configured.
			stages := mocklog.Filter(cs, "NodeStageVolume")
			if len(stages) != 1 {
				t.Fatalf("want one NodeStageVolume, got %d: %v", len(stages), mockMethods(cs))
			}
			wantStageCtx := obj{}
			if tc.setup.pvAttrs != "" {
				wantStageCtx = obj{"tier": "gold", tokensKey: "user-value"}
			}
			if ok, diff := jsonEqual(stages[0].Get("volume_context"), nilIfEmpty(wantStageCtx)); !ok {
				t.Errorf("NodeStageVolume volume_context:\n%s", diff)
			}
			if s := stages[0].Get("secrets"); s != nil {
				t.Errorf("NodeStageVolume secrets = %v, want none", s)
			}
		})
	}
}

// nilIfEmpty: the mock logs an empty map as absent (omitempty).
func nilIfEmpty(m obj) any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// ---------------------------------------------------------------------------
// 2. A driver verifies the tokens against the served JWKS (docs/kubelet.md §4.5)

// kidOf is docs/kubelet.md §4.5's keyIDFromPublicKey: base64url (unpadded) of
// SHA-256 over the PKIX DER public key.
func kidOf(t *testing.T, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func readPublicKeyPEM(t *testing.T, file string) any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		t.Fatalf("%s: want a PUBLIC KEY PEM block", file)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return k
}

func httpGet(t *testing.T, u string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", u, resp.Status, b)
	}
	return b
}

// tokWant is what a driver checks in a pod-bound token (docs/kubelet.md §4.5).
type tokWant struct {
	issuer   string
	aud      []string
	ns, sa   string
	saUID    string // "" = any non-empty UID
	pod      string
	podUID   string
	node     string
	alg      string
	kid      string
	seconds  int64  // exp - iat
	expTS    string // the tokens JSON's expirationTimestamp
	from, to time.Time
	// extended: a 3607 s token whose exp the API server extends to one year
	// (docs/kubelet.md §4.2); warnafter and expirationTimestamp are iat+statusSeconds.
	extended      bool
	statusSeconds int64
	// Gates off (docs/kubelet.md §4.5, §19.1): no jti claim, no
	// kubernetes.io.node.
	noJTI, noNode bool
}

// derivedNodeUID is the UID of a node the input has no Node object for,
// written out (docs/kubelet.md §4.5): SHA-256 of
// "csi-kubelet-sim/Node//<name>", its first 16 bytes as a version 4 UUID.
func derivedNodeUID(name string) string {
	sum := sha256.Sum256([]byte("csi-kubelet-sim/Node//" + name))
	sum[6] = sum[6]&0x0f | 0x40
	sum[8] = sum[8]&0x3f | 0x80
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// verifyToken checks the token's signature with the JWKS key named by its
// kid (go-jose, independent of the tool), then every header field and claim.
// It returns the claims.
func verifyToken(t *testing.T, label, token string, set jose.JSONWebKeySet, w tokWant) map[string]json.RawMessage {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("%s: not a compact JWS", label)
	}
	// Header: alg and kid only, no typ (4.5).
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		t.Fatalf("%s: header: %v", label, err)
	}
	var hdr map[string]any
	if err := json.Unmarshal(hb, &hdr); err != nil {
		t.Fatalf("%s: header: %v", label, err)
	}
	if ok, diff := jsonEqual(hdr, obj{"alg": w.alg, "kid": w.kid}); !ok {
		t.Errorf("%s: JWS header (want alg and kid, no typ):\n%s", label, diff)
	}

	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(w.alg)})
	if err != nil {
		t.Fatalf("%s: go-jose: %v", label, err)
	}
	if len(jws.Signatures) != 1 {
		t.Fatalf("%s: %d signatures", label, len(jws.Signatures))
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		t.Fatalf("%s: the JWKS has %d keys with kid %q", label, len(keys), jws.Signatures[0].Header.KeyID)
	}
	payload, err := jws.Verify(keys[0].Key)
	if err != nil {
		t.Fatalf("%s: signature does not verify with the served key: %v", label, err)
	}

	var claims map[string]json.RawMessage
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatalf("%s: claims: %v", label, err)
	}
	var names []string
	for k := range claims {
		names = append(names, k)
	}
	sort.Strings(names)
	// 4.5: jti (GA 1.32) and kubernetes.io.
	want := []string{"aud", "exp", "iat", "iss", "jti", "kubernetes.io", "nbf", "sub"}
	if w.noJTI {
		want = []string{"aud", "exp", "iat", "iss", "kubernetes.io", "nbf", "sub"}
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("%s: claim names %v, want %v", label, names, want)
	}
	str := func(k string) string {
		var s string
		if err := json.Unmarshal(claims[k], &s); err != nil {
			t.Errorf("%s: claim %s is not a string: %s", label, k, claims[k])
		}
		return s
	}
	num := func(k string) int64 {
		var n int64
		if err := json.Unmarshal(claims[k], &n); err != nil {
			t.Errorf("%s: claim %s is not an integer NumericDate: %s", label, k, claims[k])
		}
		return n
	}
	// aud: always a JSON array (go-jose v2 jwt.Audience).
	if a := bytes.TrimSpace(claims["aud"]); len(a) == 0 || a[0] != '[' {
		t.Errorf("%s: aud is not a JSON array: %s", label, a)
	}
	var aud []string
	_ = json.Unmarshal(claims["aud"], &aud)
	if !reflect.DeepEqual(aud, w.aud) {
		t.Errorf("%s: aud %q, want %q", label, aud, w.aud)
	}
	if got := str("iss"); got != w.issuer {
		t.Errorf("%s: iss %q, want %q", label, got, w.issuer)
	}
	if got, want := str("sub"), "system:serviceaccount:"+w.ns+":"+w.sa; got != want {
		t.Errorf("%s: sub %q, want %q", label, got, want)
	}
	if !w.noJTI {
		if got := str("jti"); !uuidRe.MatchString(got) {
			t.Errorf("%s: jti %q is not a UUID", label, got)
		}
	}
	iat, nbf, exp := num("iat"), num("nbf"), num("exp")
	if nbf != iat {
		t.Errorf("%s: nbf %d != iat %d (both now)", label, nbf, iat)
	}
	if exp-iat != w.seconds {
		t.Errorf("%s: exp-iat = %d, want %d", label, exp-iat, w.seconds)
	}
	if iat < w.from.Unix()-1 || iat > w.to.Unix()+1 {
		t.Errorf("%s: iat %d not within the run [%d, %d]", label, iat, w.from.Unix(), w.to.Unix())
	}
	statusSeconds := w.seconds
	if w.extended {
		statusSeconds = w.statusSeconds
	}
	// expirationTimestamp is the API server's now + expirationSeconds
	// (not the extended exp): iat + statusSeconds, up to a second apart.
	if ts, err := time.Parse(time.RFC3339, w.expTS); err != nil {
		t.Errorf("%s: expirationTimestamp %q: %v", label, w.expTS, err)
	} else if d := iat + statusSeconds - ts.Unix(); d < -1 || d > 1 {
		t.Errorf("%s: iat %d + %d s but the tokens JSON says expirationTimestamp %s", label, iat, statusSeconds, w.expTS)
	}

	// The kubernetes.io object.
	var k8s struct {
		Namespace      string `json:"namespace"`
		ServiceAccount *struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"serviceaccount"`
		Pod *struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"pod"`
		Node *struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"node"`
		WarnAfter *int64 `json:"warnafter"`
	}
	if err := json.Unmarshal(claims["kubernetes.io"], &k8s); err != nil {
		t.Fatalf("%s: kubernetes.io: %v", label, err)
	}
	var k8sNames map[string]json.RawMessage
	_ = json.Unmarshal(claims["kubernetes.io"], &k8sNames)
	var kn []string
	for k := range k8sNames {
		kn = append(kn, k)
	}
	sort.Strings(kn)
	wantKN := []string{"namespace", "pod", "serviceaccount"}
	if !w.noNode {
		wantKN = append(wantKN, "node")
	}
	if w.extended {
		wantKN = append(wantKN, "warnafter")
	}
	sort.Strings(wantKN)
	if want := wantKN; !reflect.DeepEqual(kn, want) {
		t.Errorf("%s: kubernetes.io keys %v, want %v", label, kn, want)
	}
	if k8s.Namespace != w.ns {
		t.Errorf("%s: kubernetes.io.namespace %q, want %q", label, k8s.Namespace, w.ns)
	}
	switch {
	case k8s.ServiceAccount == nil:
		t.Errorf("%s: no kubernetes.io.serviceaccount", label)
	case k8s.ServiceAccount.Name != w.sa:
		t.Errorf("%s: kubernetes.io.serviceaccount.name %q, want %q", label, k8s.ServiceAccount.Name, w.sa)
	case w.saUID != "" && k8s.ServiceAccount.UID != w.saUID:
		t.Errorf("%s: kubernetes.io.serviceaccount.uid %q, want the ServiceAccount object's %q", label, k8s.ServiceAccount.UID, w.saUID)
	case k8s.ServiceAccount.UID == "":
		t.Errorf("%s: kubernetes.io.serviceaccount.uid is empty", label)
	}
	if k8s.Pod == nil || k8s.Pod.Name != w.pod || k8s.Pod.UID != w.podUID {
		t.Errorf("%s: kubernetes.io.pod %+v, want {%s %s}", label, k8s.Pod, w.pod, w.podUID)
	}
	// No Node object in the manifests: the simulator's node has a UID of
	// its own, derived from its name (docs/kubelet.md §4.5), as a real
	// kubelet's Node has one.
	if !w.noNode && (k8s.Node == nil || k8s.Node.Name != w.node || k8s.Node.UID != derivedNodeUID(w.node)) {
		t.Errorf("%s: kubernetes.io.node %+v, want {name: %s, uid: %s} (no Node object: the uid derived from the name)", label, k8s.Node, w.node, derivedNodeUID(w.node))
	}
	switch {
	case !w.extended && k8s.WarnAfter != nil:
		t.Errorf("%s: warnafter %d on a non-extended token", label, *k8s.WarnAfter)
	case w.extended && (k8s.WarnAfter == nil || *k8s.WarnAfter != iat+w.statusSeconds):
		t.Errorf("%s: warnafter %v, want iat+%d = %d (docs/kubelet.md §4.2)", label, k8s.WarnAfter, w.statusSeconds, iat+w.statusSeconds)
	}
	return claims
}

func TestTokensVerifiedWithServedJWKS(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir; mostly waiting on the driver
	cases := []struct {
		name     string
		keyType  string
		alg      string
		issuer   string // "" = the default
		apiAuds  []string
		wantAuds []string // aud of the empty-audience token
		output   string
		extended bool // both requests ask 3607 s (docs/kubelet.md §4.2's extended tokens)
	}{
		{name: "rsa-default-audiences", keyType: "rsa", alg: "RS256", output: "text",
			wantAuds: []string{"https://kubernetes.default.svc.cluster.local"}},
		{name: "p256-api-audiences", keyType: "p256", alg: "ES256", output: "json",
			issuer: "https://issuer.example.test", apiAuds: []string{"a", "b"}, wantAuds: []string{"a", "b"}},
		// 4.2: expirationSeconds 3607 on a pod-bound token whose audiences
		// are within the API audiences (the empty audience) gets exp = now +
		// one year and warnafter = now+3607; vault (not an API audience) does not.
		{name: "p384-extended-3607", keyType: "p384", alg: "ES384", output: "text", extended: true,
			wantAuds: []string{"https://kubernetes.default.svc.cluster.local"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			priv, pubFile := tokKeygen(t, work, tc.keyType)
			pubKey := readPublicKeyPEM(t, pubFile)
			wantKid := kidOf(t, pubKey)
			issuer := tc.issuer
			if issuer == "" {
				issuer = "https://kubernetes.default.svc.cluster.local" // the tool's documented default
			}

			mock := startMock(t, work, "--disable-attach")
			root := filepath.Join(work, "root")
			requests := tokRequests
			if tc.extended {
				requests = "  tokenRequests:\n    - audience: vault\n      expirationSeconds: 3607\n    - audience: \"\"\n      expirationSeconds: 3607\n"
			}
			setup := tokSetup{driverSpec: "  attachRequired: false\n  podInfoOnMount: true\n" + requests,
				saName: tokSA, saUID: tokSAUID}
			mf := writeFile(t, work, "manifests.yaml", setup.manifests())
			extra := []string{"--serve-oidc", "127.0.0.1:0", "--hold", "3s", "--service-account-key-file", priv, "-o", tc.output}
			if tc.issuer != "" {
				extra = append(extra, "--issuer", tc.issuer)
			}
			if len(tc.apiAuds) > 0 {
				extra = append(extra, "--api-audiences", strings.Join(tc.apiAuds, ","))
			}
			before := time.Now()
			sim := startSim(t, tokRunArgs(mf, mock.Sock, root, extra...)...)
			base := sim.oidcBase(t)
			pub := waitMockCall(t, mock, sim, "NodePublishVolume")
			after := time.Now()

			// While the run holds: the discovery document and the key set.
			var disc struct {
				Issuer  string `json:"issuer"`
				JWKSURI string `json:"jwks_uri"`
			}
			if err := json.Unmarshal(httpGet(t, base+"/.well-known/openid-configuration"), &disc); err != nil {
				t.Fatalf("discovery document: %v", err)
			}
			if disc.Issuer != issuer || disc.JWKSURI == "" {
				t.Errorf("discovery document: issuer %q (want %q), jwks_uri %q (want set)", disc.Issuer, issuer, disc.JWKSURI)
			}
			jwksBytes := httpGet(t, base+"/openid/v1/jwks")
			var set jose.JSONWebKeySet
			if err := json.Unmarshal(jwksBytes, &set); err != nil {
				t.Fatalf("JWKS: %v\n%s", err, jwksBytes)
			}
			if len(set.Keys) != 1 {
				t.Fatalf("JWKS has %d keys, want 1: %s", len(set.Keys), jwksBytes)
			}
			k := set.Keys[0]
			if k.KeyID != wantKid || k.Algorithm != tc.alg || k.Use != "sig" || !k.IsPublic() {
				t.Errorf("JWKS key: kid %q alg %q use %q public %v; want kid %q (sha256 of the PKIX public key), alg %s, use sig, public",
					k.KeyID, k.Algorithm, k.Use, k.IsPublic(), wantKid, tc.alg)
			}

			tokJSON := strMap(t, pub.Get("volume_context"))[tokensKey]
			m := checkTokensJSON(t, tokJSON, "", "vault")
			w := tokWant{issuer: issuer, ns: tokNS, sa: tokSA, saUID: tokSAUID, pod: tokPod, podUID: tokPodUID,
				node: simNode, alg: tc.alg, kid: wantKid, seconds: 3600, from: before, to: after}
			wv := w
			wv.aud, wv.expTS = []string{"vault"}, m["vault"].ExpirationTimestamp
			we := w
			we.aud, we.expTS = tc.wantAuds, m[""].ExpirationTimestamp
			statusSeconds := int64(3600)
			if tc.extended {
				statusSeconds = 3607
				wv.seconds = 3607
				we.extended, we.statusSeconds, we.seconds = true, 3607, 365*24*3600 // maxExtendedExpirationSeconds
			}
			checkExpiry(t, "vault", m["vault"], wv.seconds, before, after)
			checkExpiry(t, "", m[""], statusSeconds, before, after)
			verifyToken(t, "vault token", m["vault"].Token, set, wv)
			verifyToken(t, "empty-audience token", m[""].Token, set, we)

			// The tool's own verifier against the served JWKS, as a driver
			// would use it: the right audience passes, a wrong one fails.
			jwksURL := base + "/openid/v1/jwks"
			r := runSim(t, "tokens", "verify", "--jwks-url", jwksURL, "--audience", "vault", "--issuer", issuer, m["vault"].Token)
			if r.Code != 0 {
				t.Errorf("tokens verify --audience vault: exit %d, want 0\n%s", r.Code, r)
			} else if !strings.Contains(r.Stdout, "system:serviceaccount:"+tokNS+":"+tokSA) {
				t.Errorf("tokens verify did not print the claims:\n%s", r)
			}
			r = runSim(t, "tokens", "verify", "--jwks-url", jwksURL, "--audience", tc.wantAuds[0], m[""].Token)
			if r.Code != 0 {
				t.Errorf("tokens verify --audience %s (empty-audience token): exit %d, want 0\n%s", tc.wantAuds[0], r.Code, r)
			}
			r = runSim(t, "tokens", "verify", "--jwks-url", jwksURL, "--audience", "not-vault", m["vault"].Token)
			if r.Code != 1 {
				t.Errorf("tokens verify with the wrong audience: exit %d, want 1\n%s", r.Code, r)
			}

			res := sim.wait(t, simTimeout)
			mockCalls(t, mock)
			if res.Code != 0 {
				t.Errorf("run: exit %d, want 0\n%s", res.Code, res)
			}
			assertNothingLeft(t, root, work)
			// The server lives only as long as the run.
			if resp, err := http.Get(jwksURL); err == nil {
				resp.Body.Close()
				t.Errorf("JWKS still served after the run ended")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 3. Token bytes are never printed without --show-secrets

// fingerprint is the redacted form the trace shows: "<token sha256:" and the
// first 8 hex digits of SHA-256 over the token.
func fingerprint(tok string) string { return "<token sha256:" + sha256hex(tok)[:8] + ">" }

func TestTokensNeverPrinted(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir; mostly waiting on the driver
	cases := []struct {
		name      string
		inSecrets bool
		args      []string
		show      bool
	}{
		{name: "text", args: nil},
		{name: "json", args: []string{"-o", "json"}},
		{name: "text-verbose", args: []string{"-v"}},
		{name: "json-verbose", args: []string{"-o", "json", "-v"}},
		{name: "secrets-text-verbose", inSecrets: true, args: []string{"-v"}},
		{name: "secrets-json-verbose", inSecrets: true, args: []string{"-o", "json", "-v"}},
		{name: "text-show", args: []string{"--show-secrets"}, show: true},
		{name: "json-show", args: []string{"-o", "json", "--show-secrets"}, show: true},
		{name: "secrets-json-show", inSecrets: true, args: []string{"-o", "json", "--show-secrets"}, show: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			priv, _ := tokKeygen(t, work, "rsa")
			mock := startMock(t, work, "--disable-attach")
			root := filepath.Join(work, "root")
			spec := "  attachRequired: false\n  podInfoOnMount: true\n" + tokRequests
			if tc.inSecrets {
				spec += "  serviceAccountTokenInSecrets: true\n"
			}
			mf := writeFile(t, work, "manifests.yaml", tokSetup{driverSpec: spec, saName: tokSA, publishSecret: true}.manifests())
			args := append([]string{"--serve-oidc", "127.0.0.1:0", "--service-account-key-file", priv}, tc.args...)
			r := runSim(t, tokRunArgs(mf, mock.Sock, root, args...)...)
			cs := mockCalls(t, mock)
			wantCode(t, r, 0)
			assertNothingLeft(t, root, work)

			pub := onePublish(t, cs, readFile(mock.Log))
			where := "volume_context"
			if tc.inSecrets {
				where = "secrets"
			}
			m := checkTokensJSON(t, strMap(t, pub.Get(where))[tokensKey], "", "vault")
			all := r.Stdout + r.Stderr

			if tc.show {
				for aud, st := range m {
					if !strings.Contains(r.Stdout, st.Token) {
						t.Errorf("--show-secrets: the %q token is not printed", aud)
					}
				}
				return
			}

			for aud, st := range m {
				parts := strings.Split(st.Token, ".")
				for what, s := range map[string]string{"token": st.Token, "payload": parts[1], "signature": parts[2]} {
					if strings.Contains(all, s) {
						t.Errorf("the %s of the %q token is printed without --show-secrets", what, aud)
					}
				}
				// The redacted form: audience, expiry, fingerprint.
				if !strings.Contains(r.Stdout, fingerprint(st.Token)) {
					t.Errorf("the %q token's fingerprint %s is not in the output", aud, fingerprint(st.Token))
				}
				if !strings.Contains(r.Stdout, st.ExpirationTimestamp) {
					t.Errorf("the %q token's expirationTimestamp %s is not in the output", aud, st.ExpirationTimestamp)
				}
			}
			if fingerprint(m[""].Token) == fingerprint(m["vault"].Token) {
				t.Errorf("the two tokens have the same fingerprint")
			}
			if strings.Contains(all, "eyJ") {
				t.Errorf("something JWT-shaped (eyJ...) is printed without --show-secrets")
			}
			if strings.Contains(r.Stdout, "alice") {
				t.Errorf("the publish secret's value is printed without --show-secrets")
			}

			if len(tc.args) == 0 || tc.args[0] != "-o" {
				return
			}
			// JSON: the NodePublishVolume call carries the tokens value in
			// the kubelet's shape with each token replaced by its fingerprint.
			var found bool
			for _, l := range calls(parseTrace(t, r)) {
				if l.Method != "NodePublishVolume" {
					continue
				}
				found = true
				mp, _ := l.Request[where].(map[string]any)
				val, _ := mp[tokensKey].(string)
				var red map[string]tokStatus
				if err := json.Unmarshal([]byte(val), &red); err != nil {
					t.Fatalf("trace request.%s[%q] = %q: not the tokens JSON: %v", where, tokensKey, val, err)
				}
				want := map[string]tokStatus{}
				for aud, st := range m {
					want[aud] = tokStatus{Token: fingerprint(st.Token), ExpirationTimestamp: st.ExpirationTimestamp}
				}
				if !reflect.DeepEqual(red, want) {
					t.Errorf("redacted tokens in the trace:\n got %+v\nwant %+v", red, want)
				}
			}
			if !found {
				t.Errorf("no NodePublishVolume call in the JSON trace")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 4. Bad input: exit 2, one line naming the file or field

// writeCertPEM writes a self-signed certificate (a PEM a kube-apiserver would
// not take as a signing key).
func writeCertPEM(t *testing.T, file string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-a-key"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTokensBadInput(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir; mostly waiting on the driver
	work := workDir(t)
	_, pubFile := tokKeygen(t, work, "rsa")
	cert := filepath.Join(work, "cert.pem")
	writeCertPEM(t, cert)
	junk := writeFile(t, work, "junk.pem", "not a PEM file\n")
	missing := filepath.Join(work, "no-such.key")
	good := tokSetup{driverSpec: "  attachRequired: false\n  podInfoOnMount: true\n" + tokRequests, saName: tokSA}.manifests()

	cases := []struct {
		name      string
		manifests string
		keyFile   string
		want      []string
	}{
		{"key-missing", good, missing, []string{"--service-account-key-file", missing}},
		{"key-directory", good, work, []string{"--service-account-key-file", work}},
		{"key-not-pem", good, junk, []string{"--service-account-key-file", junk}},
		{"key-is-public-key", good, pubFile, []string{"--service-account-key-file", pubFile, "PUBLIC KEY"}},
		{"key-is-certificate", good, cert, []string{"--service-account-key-file", cert, "CERTIFICATE"}},
		{"duplicate-audience", tokSetup{driverSpec: "  attachRequired: false\n  tokenRequests:\n    - audience: vault\n    - audience: vault\n",
			saName: tokSA}.manifests(), "", []string{"spec.tokenRequests[1].audience: Duplicate value", "vault"}},
		{"duplicate-empty-audience", tokSetup{driverSpec: "  attachRequired: false\n  tokenRequests:\n    - audience: \"\"\n    - audience: vault\n    - audience: \"\"\n",
			saName: tokSA}.manifests(), "", []string{"spec.tokenRequests[2].audience: Duplicate value"}},
		{"expiration-599", tokSetup{driverSpec: "  attachRequired: false\n  tokenRequests:\n    - audience: vault\n      expirationSeconds: 599\n",
			saName: tokSA}.manifests(), "", []string{"spec.tokenRequests[0].expirationSeconds", "may not specify a duration less than 10 minutes"}},
		{"expiration-over-2^32", tokSetup{driverSpec: "  attachRequired: false\n  tokenRequests:\n    - audience: vault\n      expirationSeconds: 4294967297\n",
			saName: tokSA}.manifests(), "", []string{"spec.tokenRequests[0].expirationSeconds", "may not specify a duration larger than 2^32 seconds"}},
		{"in-secrets-without-requests", tokSetup{driverSpec: "  attachRequired: false\n  serviceAccountTokenInSecrets: true\n",
			saName: tokSA}.manifests(), "", []string{"serviceAccountTokenInSecrets is set but no tokenRequests are specified"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := workDir(t)
			mock := startMock(t, sub, "--disable-attach")
			root := filepath.Join(sub, "root")
			mf := writeFile(t, sub, "manifests.yaml", tc.manifests)
			var extra []string
			if tc.keyFile != "" {
				extra = []string{"--service-account-key-file", tc.keyFile}
			}
			r := runSim(t, tokRunArgs(mf, mock.Sock, root, extra...)...)
			cs := mockCalls(t, mock)
			wantCode(t, r, 2)
			want := tc.want
			if tc.keyFile == "" {
				want = append([]string{mf}, want...) // names the manifest file
			}
			oneLineError(t, r, want...)
			if ps := mocklog.Filter(cs, "NodeStageVolume", "NodePublishVolume"); len(ps) > 0 {
				t.Errorf("bad input reached the driver: %v", mockMethods(cs))
			}
			assertNothingLeft(t, root, sub)
		})
	}

	// The 600 s and 2^32 s bounds themselves are accepted (docs/kubelet.md §4.2).
	t.Run("expiration-bounds-accepted", func(t *testing.T) {
		for _, secs := range []int64{600, 1 << 32} {
			sub := workDir(t)
			mock := startMock(t, sub, "--disable-attach")
			root := filepath.Join(sub, "root")
			mf := writeFile(t, sub, "manifests.yaml", tokSetup{driverSpec: fmt.Sprintf("  attachRequired: false\n  tokenRequests:\n    - audience: vault\n      expirationSeconds: %d\n", secs),
				saName: tokSA}.manifests())
			before := time.Now()
			r := runSim(t, tokRunArgs(mf, mock.Sock, root)...)
			after := time.Now()
			cs := mockCalls(t, mock)
			if r.Code != 0 {
				t.Fatalf("expirationSeconds %d: exit %d, want 0\n%s", secs, r.Code, r)
			}
			assertNothingLeft(t, root, sub)
			m := checkTokensJSON(t, strMap(t, onePublish(t, cs, readFile(mock.Log)).Get("volume_context"))[tokensKey], "vault")
			// No --service-account-max-token-expiration in the simulated API
			// server, so no clamping.
			checkExpiry(t, "vault", m["vault"], secs, before, after)
		}
	})

	// A Pod without serviceAccountName runs as "default" (the kubelet's
	// default): pod info and the token's sub and serviceaccount claim say so.
	t.Run("pod-without-service-account", func(t *testing.T) {
		sub := workDir(t)
		priv, _ := tokKeygen(t, sub, "p256")
		mock := startMock(t, sub, "--disable-attach")
		root := filepath.Join(sub, "root")
		mf := writeFile(t, sub, "manifests.yaml", tokSetup{driverSpec: "  attachRequired: false\n  podInfoOnMount: true\n" + tokRequests}.manifests())
		before := time.Now()
		sim := startSim(t, tokRunArgs(mf, mock.Sock, root, "--serve-oidc", "127.0.0.1:0", "--hold", "2s", "--service-account-key-file", priv)...)
		base := sim.oidcBase(t)
		pub := waitMockCall(t, mock, sim, "NodePublishVolume")
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(httpGet(t, base+"/openid/v1/jwks"), &set); err != nil {
			t.Fatal(err)
		}
		r := sim.wait(t, simTimeout)
		mockCalls(t, mock)
		wantCode(t, r, 0)
		assertNothingLeft(t, root, sub)

		ctx := strMap(t, pub.Get("volume_context"))
		if got := ctx["csi.storage.k8s.io/serviceAccount.name"]; got != "default" {
			t.Errorf("pod info serviceAccount.name %q, want %q", got, "default")
		}
		m := checkTokensJSON(t, ctx[tokensKey], "", "vault")
		w := tokWant{issuer: "https://kubernetes.default.svc.cluster.local", aud: []string{"vault"}, ns: tokNS, sa: "default",
			pod: tokPod, podUID: tokPodUID, node: simNode, alg: "ES256", kid: set.Keys[0].KeyID, seconds: 3600,
			expTS: m["vault"].ExpirationTimestamp, from: before, to: time.Now()}
		verifyToken(t, "vault token", m["vault"].Token, set, w)
	})
}

// ---------------------------------------------------------------------------
// 5. Republish re-sends the cached token (docs/kubelet.md §4.6, §5, §21.9)

func TestTokensRepublishSameToken(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir; mostly waiting on the driver
	work := workDir(t)
	mock := startMock(t, work, "--disable-attach")
	root := filepath.Join(work, "root")
	mf := writeFile(t, work, "manifests.yaml", tokSetup{
		driverSpec: "  attachRequired: false\n  podInfoOnMount: true\n  requiresRepublish: true\n" + tokRequests,
		saName:     tokSA}.manifests())
	r := runSim(t, tokRunArgs(mf, mock.Sock, root, "--republish-period", "1s", "--hold", "3500ms", "-o", "json")...)
	cs := mockCalls(t, mock)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s\nmock log:\n%s", r.Code, r, readFile(mock.Log))
	}
	assertNothingLeft(t, root, work)

	if n := len(mocklog.Filter(cs, "NodeStageVolume")); n != 1 {
		t.Errorf("%d NodeStageVolume calls, want exactly 1 (a republish does not stage again, docs/kubelet.md §5): %v", n, mockMethods(cs))
	}
	pubs := mocklog.Filter(cs, "NodePublishVolume")
	if len(pubs) < 3 {
		t.Fatalf("%d NodePublishVolume calls in 3.5 s with a 1 s republish period, want at least 3: %v", len(pubs), mockMethods(cs))
	}
	first := strMap(t, pubs[0].Get("volume_context"))[tokensKey]
	checkTokensJSON(t, first, "", "vault")
	for i, p := range pubs {
		if !p.OK() {
			t.Errorf("NodePublishVolume %d failed at the mock: %s", i+1, p.Error)
		}
		if got := strMap(t, p.Get("volume_context"))[tokensKey]; got != first {
			t.Errorf("NodePublishVolume %d: tokens differ from the first publish (the kubelet's cache re-sends the same token until 80%% of its lifetime, docs/kubelet.md §4.6):\n got %s\nwant %s", i+1, got, first)
		}
		// docs/kubelet.md §21.9: a republish repeats the request byte for byte.
		if ok, diff := jsonEqual(p.Request, pubs[0].Request); !ok {
			t.Errorf("NodePublishVolume %d differs from the first:\n%s", i+1, diff)
		}
	}
}

// ---------------------------------------------------------------------------
// Claim gates by version (docs/kubelet.md §4.5 and §19.1)

// TestTokensClaimGates: ServiceAccountTokenJTI and
// ServiceAccountTokenPodNodeInfo are beta (on) in 1.30 and 1.31 and can be
// turned off there; off, the token has no jti and no kubernetes.io.node.
func TestTokensClaimGates(t *testing.T) {
	cases := []struct {
		name          string
		args          []string
		noJTI, noNode bool
	}{
		{name: "1.31-default", args: []string{"--kubelet-version", "1.31"}},
		{name: "1.31-jti-off", args: []string{"--kubelet-version", "1.31", "--feature-gates", "ServiceAccountTokenJTI=false"}, noJTI: true},
		{name: "1.30-node-info-off", args: []string{"--kubelet-version", "1.30", "--feature-gates", "ServiceAccountTokenPodNodeInfo=false"}, noNode: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			priv, pubFile := tokKeygen(t, work, "rsa")
			pubKey := readPublicKeyPEM(t, pubFile)
			// The driver's key set, built here from the public key file.
			set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pubKey, KeyID: kidOf(t, pubKey), Algorithm: "RS256", Use: "sig"}}}
			mock := startMock(t, work, "--disable-attach")
			root := filepath.Join(work, "root")
			mf := writeFile(t, work, "manifests.yaml", tokSetup{driverSpec: "  attachRequired: false\n" + tokRequests, saName: tokSA}.manifests())
			before := time.Now()
			r := runSim(t, tokRunArgs(mf, mock.Sock, root, append([]string{"--service-account-key-file", priv}, tc.args...)...)...)
			after := time.Now()
			cs := mockCalls(t, mock)
			wantCode(t, r, 0)
			assertNothingLeft(t, root, work)
			m := checkTokensJSON(t, strMap(t, onePublish(t, cs, readFile(mock.Log)).Get("volume_context"))[tokensKey], "", "vault")
			w := tokWant{issuer: "https://kubernetes.default.svc.cluster.local", aud: []string{"vault"}, ns: tokNS, sa: tokSA,
				pod: tokPod, podUID: tokPodUID, node: simNode, alg: "RS256", kid: set.Keys[0].KeyID, seconds: 3600,
				expTS: m["vault"].ExpirationTimestamp, from: before, to: after, noJTI: tc.noJTI, noNode: tc.noNode}
			verifyToken(t, "vault token", m["vault"].Token, set, w)
		})
	}
}
