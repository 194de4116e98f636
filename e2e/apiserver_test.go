package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The API server mode (--apiserver): a real kube-apiserver on etcd around
// the node, from the helper csi-kubelet-sim-apiserver (`make
// apiserver-helper`) and Debian's etcd. The tests skip without them.

func apiserverHelper(tb testing.TB) {
	tb.Helper()
	p := os.Getenv("CSI_KUBELET_SIM_APISERVER")
	if p == "" {
		p = filepath.Join(filepath.Dir(simBin(tb)), "csi-kubelet-sim-apiserver")
	}
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("no API server helper (%v): `make apiserver-helper`", err)
	}
	if _, err := os.Stat("/usr/bin/etcd"); err != nil && os.Getenv("CSI_KUBELET_SIM_ETCD") == "" {
		tb.Skip("no etcd: `make apiserver-etcd`")
	}
}

func secretsDriverBin(tb testing.TB) string {
	return binary(tb, "CSI_SECRETS_DRIVER", "csi-secrets-driver")
}

// startWithDriver starts the simulator with --apiserver on the sample,
// waits for the driver's kubeconfig, then starts the secrets driver with
// KUBECONFIG set to it, as a user does.
func startWithDriver(t *testing.T, work, manifests string, extra ...string) (*bgSim, string) {
	t.Helper()
	return startCommandWithDriver(t, "run", work, manifests, extra...)
}

func startCommandWithDriver(t *testing.T, command, work, manifests string, extra ...string) (*bgSim, string) {
	t.Helper()
	root := filepath.Join(work, "root")
	sock := filepath.Join(work, "secrets.sock")
	kc := filepath.Join(work, "driver.kubeconfig")
	args := append([]string{command, "--apiserver", "-f", manifests, "--endpoint", sock, "--root-dir", root,
		"--node-name", simNode, "--driver-kubeconfig", kc, "--driver-wait", "30s"}, extra...)
	sim := startSim(t, args...)
	deadline := time.Now().Add(40 * time.Second)
	for {
		if _, err := os.Stat(kc); err == nil {
			break
		}
		select {
		case <-sim.exited:
			t.Fatalf("the simulator exited before writing the kubeconfig:\n%s\n%s", sim.out.String(), sim.errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no kubeconfig at %s after 40s:\n%s", kc, sim.errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Setenv("KUBECONFIG", kc)
	startDriver(t, secretsDriverBin(t), sock, filepath.Join(work, "secrets-driver.log"), "--endpoint", sock, "--node-id", "sn", "-v", "2")
	return sim, root
}

// assertNoControlPlane: no process of the run's control plane is left
// (etcd and the helper name the root dir in their arguments) and nothing
// listens on the API server's port.
func assertNoControlPlane(t *testing.T, root string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), root+"/") && !strings.Contains(string(b), "csi-kubelet-sim\x00run") {
			t.Errorf("process %d of the control plane left: %s", pid, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	if _, err := os.Lstat(filepath.Join(root, ".csi-kubelet-sim", "apiserver")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control plane dir left: %v", err)
	}
}

// A driver that reads a custom resource, has the pod's token checked by a
// TokenReview and writes a status object owned by the pod runs end to end:
// the trace shows its requests before the publish they belong to, the
// summary what it created, and the garbage collector deletes the status
// with the pod.
func TestAPIServerSecretsStore(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	page := filepath.Join(work, "report.html")
	sim, root := startWithDriver(t, work, sample(t, "apiserver"), "--report", page)
	r := sim.wait(t, simTimeout)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the driver is system:serviceaccount:secrets-store:secrets-store-csi-driver",
		"s API requests (", "create secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io default/web-default-vault-db → 201"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the report lacks %q:\n%s", want, html)
		}
	}
	out := r.Stdout
	for _, want := range []string{
		"API server: kube-apiserver v1.37.2 on etcd at https://127.0.0.1:",
		"as system:serviceaccount:secrets-store:secrets-store-csi-driver: the ServiceAccount the input's RBAC binds",
		"[driver API request] get secretproviderclasses.secrets-store.csi.x-k8s.io default/vault-db → 200",
		"[driver API request] create tokenreviews.authentication.k8s.io → 201",
		"[driver API request] create secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io default/web-default-vault-db → 201",
		"[kubelet API server] wrote CSINode " + simNode,
		"[kubelet API server] deleted Pod default/web",
		"garbage collector: deleted secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io default/web-default-vault-db (owner Pod default/web)",
		"it created or changed: create secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io default/web-default-vault-db",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	// The requests made while the driver handled NodePublishVolume come
	// before its line.
	req := strings.Index(out, "create secretproviderclasspodstatuses")
	pub := strings.Index(out, "NodePublishVolume          OK")
	if req < 0 || pub < 0 || req > pub {
		t.Errorf("the status write (at %d) is not printed before NodePublishVolume (at %d)", req, pub)
	}
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
	if _, err := os.Stat(filepath.Join(work, "driver.kubeconfig")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the driver's kubeconfig the run wrote is left: %v", err)
	}
}

// The API server refuses the pod's token for another audience: the
// driver fails the mount, and the run says why.
func TestAPIServerTokenRefused(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	b, err := os.ReadFile(filepath.Join(sample(t, "apiserver"), "secrets-store.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := strings.Replace(string(b), "    audience: vault\n", "    audience: vault\n    reviewAudience: another-backend\n", 1)
	f := filepath.Join(work, "refused.yaml")
	if err := os.WriteFile(f, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	sim, root := startWithDriver(t, work, f)
	r := sim.wait(t, simTimeout)
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1 (the driver failed)\n%s", r.Code, r)
	}
	if !strings.Contains(r.Stdout, "Unauthenticated") || !strings.Contains(r.Stdout, "the API server refused the pod's token (TokenReview)") {
		t.Errorf("no refusal in the trace:\n%s", r.Stdout)
	}
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
}

// Bad input and a broken environment: one line naming what, the exit
// code, and nothing left.
func TestAPIServerBadInput(t *testing.T) {
	apiserverHelper(t)
	crd := func(name, plural, kind string) string {
		return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ` + name + `}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: ` + plural + `, kind: ` + kind + `}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
---
`
	}
	pod := `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: registry.k8s.io/pause:3.10}]
  volumes: [{name: v, csi: {driver: ref.csi.kubelet-sim.io}}]
`
	cases := []struct {
		name, input string
		env         []string
		code        int
		want        string
	}{
		{name: "crd-never-established", code: 2,
			input: crd("foos.example.com", "foos", "Foo") + crd("bars.example.com", "bars", "Foo") + pod,
			want:  "CustomResourceDefinition bars.example.com did not become Established: NamesAccepted is False"},
		{name: "object-refused", code: 2,
			input: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\nsubjects: []\n---\n" + pod,
			want:  "the API server refused ClusterRoleBinding b:"},
		{name: "webhook-refuses", code: 2,
			input: `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: gate}
webhooks:
- name: gate.example.com
  clientConfig: {url: "https://` + refusedAddr(t) + `/mutate"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
---
` + pod,
			want: `the API server refused Pod default/p: Internal error occurred: failed calling webhook "gate.example.com"`},
		{name: "etcd-dies", code: 3, input: pod, env: []string{"CSI_KUBELET_SIM_ETCD=/bin/false"},
			want: "--apiserver: the API server did not start: the helper exited (exit status 4): csi-kubelet-sim-apiserver: etcd exited: exit status 1"},
		{name: "no-helper", code: 3, input: pod, env: []string{"CSI_KUBELET_SIM_APISERVER=/nonexistent/helper"},
			want: "--apiserver needs the helper csi-kubelet-sim-apiserver (kube-apiserver), and it is not at [/nonexistent/helper ($CSI_KUBELET_SIM_APISERVER)]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			work := workDir(t)
			drv := startRefDriver(t, work)
			f := filepath.Join(work, "in.yaml")
			if err := os.WriteFile(f, []byte(tc.input), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.env {
				k, v, _ := strings.Cut(e, "=")
				t.Setenv(k, v)
			}
			root := filepath.Join(work, "root")
			r := runSim(t, "run", "--apiserver", "-f", f, "--endpoint", drv.Sock, "--root-dir", root, "--node-name", simNode)
			if r.Code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", r.Code, tc.code, r)
			}
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, tc.want) {
				t.Errorf("last stderr line %q lacks %q", last, tc.want)
			}
			assertNothingLeft(t, root, work)
			assertNoControlPlane(t, root)
		})
	}
}

// Ctrl-C while the pod runs (--hold forever): the volumes are torn down,
// the control plane stopped and removed; exit 0, the hold's end.
func TestAPIServerInterrupt(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	sim, root := startWithDriver(t, work, sample(t, "apiserver"), "--hold", "forever")
	waitOutput(t, sim, "NodePublishVolume          OK", 40*time.Second)
	_ = sim.cmd.Process.Signal(syscall.SIGINT)
	r := sim.wait(t, simTimeout)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r)
	}
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
}

// kill -9 of the simulator: its helper and etcd die with it; `cleanup`
// removes the control plane's dir and tears the volume down.
func TestAPIServerKillThenCleanup(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	sim, root := startWithDriver(t, work, sample(t, "apiserver"), "--hold", "forever")
	waitOutput(t, sim, "NodePublishVolume          OK", 40*time.Second)
	_ = sim.cmd.Process.Kill()
	<-sim.exited
	deadline := time.Now().Add(10 * time.Second)
	for hasControlPlaneProcess(root) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if hasControlPlaneProcess(root) {
		t.Fatal("the control plane outlived the killed simulator")
	}
	r := runSim(t, "cleanup", "--root-dir", root, "--endpoint", filepath.Join(work, "secrets.sock"), "--node-name", simNode)
	if r.Code != 0 {
		t.Fatalf("cleanup exit %d\n%s", r.Code, r)
	}
	// Gone by now, or still exiting (its parent-death signal under load):
	// cleanup says it removed the dir, or stopped the helper and removed it.
	if !strings.Contains(r.Stdout, "removed the control plane an interrupted --apiserver run left") &&
		!regexp.MustCompile(`stopped the helper \S+ \(PID \d+\) an interrupted --apiserver run left, and removed its dir`).MatchString(r.Stdout) {
		t.Errorf("cleanup does not say it removed the control plane:\n%s", r.Stdout)
	}
	assertNoControlPlane(t, root)
	if ms := mountsUnder(root); len(ms) > 0 {
		t.Errorf("still mounted: %v", ms)
	}
}

func hasControlPlaneProcess(root string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), filepath.Join(root, ".csi-kubelet-sim", "apiserver")) {
			return true
		}
	}
	return false
}

func waitOutput(t *testing.T, sim *bgSim, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(sim.out.String(), want) {
		select {
		case <-sim.exited:
			t.Fatalf("exited before %q:\n%s\n%s", want, sim.out.String(), sim.errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q after %s:\n%s", want, timeout, sim.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The tokens the API server's TokenRequest API returns (--apiserver) and
// those of the simulator's own issuer, for the same pod, CSIDriver and key:
// the same header and claims, apart from the times, the token ID and the
// UIDs the API server assigns (docs/kubelet.md §4.5), at the newest
// release (the default helper) and the oldest one (the helper built with
// `make apiserver-helper KUBE_VERSION=v1.30.14`, and --kubelet-version 1.30).
func TestAPIServerTokenClaimsMatchIssuer(t *testing.T) {
	apiserverHelper(t)
	t.Run("v1.37.2", func(t *testing.T) { tokenClaimsMatchIssuer(t, "v1.37.2") })
	t.Run("v1.30.14", func(t *testing.T) {
		helper := releaseHelper(t, "v1.30.14")
		t.Setenv("CSI_KUBELET_SIM_APISERVER", helper)
		tokenClaimsMatchIssuer(t, "v1.30.14", "--kubelet-version", "1.30")
	})
}

// A kubelet of 1.30 on the default helper's API server (1.37): the run
// works, and its trace says the two releases differ and what that changes.
// The 1.30 kubelet still hands the tokens in volume_context, though the
// 1.37 API server keeps the CSIDriver's serviceAccountTokenInSecrets.
func TestAPIServerReleaseSkew(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	drv := startRefDriver(t, work)
	r := runSim(t, "run", "-f", sample(t, "tokens"), "--endpoint", drv.Sock, "--node-name", simNode,
		"--kubelet-version", "1.30", "--apiserver", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r)
	}
	published := 0
	for _, c := range calls(parseTrace(t, r)) {
		if c.Method != "NodePublishVolume" {
			continue
		}
		published++
		vc, _ := c.Request["volume_context"].(map[string]any)
		if _, ok := vc[tokensKey]; !ok {
			t.Errorf("a 1.30 kubelet's NodePublishVolume without %s in volume_context: %v", tokensKey, c.Request)
		}
	}
	if published == 0 {
		t.Fatalf("no NodePublishVolume:\n%s", r.Stdout)
	}
	for _, want := range []string{"kube-apiserver v1.37.2 on etcd",
		"API server warning: kube-apiserver v1.37.2 is 7 minor releases newer than the simulated kubelet 1.30 (outside the version skew policy",
		"make apiserver-helper KUBE_VERSION=v1.30.N"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the trace lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// releaseHelper is the API server helper of another release, beside the
// default one; the test is skipped when it was not built.
func releaseHelper(t *testing.T, version string) string {
	t.Helper()
	def := os.Getenv("CSI_KUBELET_SIM_APISERVER")
	if def == "" {
		def = filepath.Join(filepath.Dir(simBin(t)), "csi-kubelet-sim-apiserver")
	}
	p := def + "-" + version
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no API server helper of Kubernetes %s (%v): `make apiserver-helper KUBE_VERSION=%s` builds it", version, err, version)
	}
	return p
}

// tokenClaimsMatchIssuer compares the claims of one release; the API
// server's trace line names the helper's release, apiserver.
func tokenClaimsMatchIssuer(t *testing.T, apiserver string, release ...string) {
	work := workDir(t)
	drv := startRefDriver(t, work)
	key := filepath.Join(work, "sa.key")
	writeRSAKey(t, key)
	for _, in := range []struct{ name, path string }{
		{"sample", sample(t, "tokens")},
		{"extended expiration", extendedTokensInput(t, work)},
	} {
		t.Run(in.name, func(t *testing.T) { compareTokenClaims(t, in.path, drv.Sock, key, apiserver, release) })
	}
}

// extendedTokensInput is the tokens sample with its API-audience token
// asked for 3607 s: the API server extends it to a year and writes
// kubernetes.io.warnafter (--service-account-extend-token-expiration).
func extendedTokensInput(t *testing.T, work string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sample(t, "tokens"), "tokens.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const api = "    - audience: \"\"\n"
	if !bytes.Contains(b, []byte(api)) {
		t.Fatalf("the tokens sample has no %q", api)
	}
	dir := filepath.Join(work, "extended")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(api), []byte(api+"      expirationSeconds: 3607\n"), 1)
	if err := os.WriteFile(filepath.Join(dir, "tokens.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func compareTokenClaims(t *testing.T, input, sock, key, apiserver string, release []string) {
	claims := func(extra ...string) map[string]map[string]any {
		args := append([]string{"run", "-f", input, "--endpoint", sock, "--node-name", simNode,
			"--service-account-key-file", key, "--show-secrets", "-o", "json"}, release...)
		args = append(args, extra...)
		r := runSim(t, args...)
		if r.Code != 0 {
			t.Fatalf("exit %d\n%s", r.Code, r)
		}
		out := map[string]map[string]any{}
		for _, c := range calls(parseTrace(t, r)) {
			if c.Method != "NodePublishVolume" {
				continue
			}
			// In secrets where the CSIDriver asks for it and the release
			// knows the field, in volume_context otherwise (1.30).
			secrets, _ := c.Request["secrets"].(map[string]any)
			raw, _ := secrets[tokensKey].(string)
			if raw == "" {
				vc, _ := c.Request["volume_context"].(map[string]any)
				raw, _ = vc[tokensKey].(string)
			}
			var toks map[string]struct {
				Token string `json:"token"`
			}
			if err := json.Unmarshal([]byte(raw), &toks); err != nil {
				t.Fatalf("%s: %v", tokensKey, err)
			}
			for aud, tok := range toks {
				out[aud] = jwtParts(t, tok.Token)
			}
		}
		if len(out) == 0 {
			t.Fatalf("no tokens in the NodePublishVolume calls:\n%s", r.Stdout)
		}
		if want := "kube-apiserver " + apiserver + " on etcd"; len(extra) > 0 && !strings.Contains(r.Stdout, want) {
			t.Errorf("the trace does not say %q:\n%s", want, r.Stdout)
		}
		if len(extra) > 0 && strings.Contains(r.Stdout, "API server warning: kube-apiserver") {
			t.Errorf("a release skew is reported for the same releases:\n%s", r.Stdout)
		}
		return out
	}
	own, api := claims(), claims("--apiserver")
	if !reflect.DeepEqual(keysOf(own), keysOf(api)) {
		t.Fatalf("audiences: own issuer %v, API server %v", keysOf(own), keysOf(api))
	}
	for aud := range own {
		o, a := normaliseClaims(t, own[aud]), normaliseClaims(t, api[aud])
		if !reflect.DeepEqual(o, a) {
			ob, _ := json.MarshalIndent(o, "", " ")
			ab, _ := json.MarshalIndent(a, "", " ")
			t.Errorf("audience %q: own issuer\n%s\nAPI server\n%s", aud, ob, ab)
			continue
		}
		ab, _ := json.Marshal(a)
		t.Logf("audience %q: the same header and claims: %s", aud, ab)
	}
}

// jwtParts decodes a token's header and claims (unverified: both runs
// sign with the same key, and the header's kid is compared).
func jwtParts(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", token)
	}
	out := map[string]any{}
	for i, name := range []string{"header", "claims"} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out[name] = m
	}
	return out
}

// normaliseClaims drops what differs by nature: the times (the lifetime
// exp-iat is kept), the token ID, and the UIDs of the pod, service
// account and node (the API server's, not the input's).
func normaliseClaims(t *testing.T, tok map[string]any) map[string]any {
	t.Helper()
	c, _ := tok["claims"].(map[string]any)
	exp, _ := c["exp"].(float64)
	iat, _ := c["iat"].(float64)
	c["lifetime"] = exp - iat
	if k8s, ok := c["kubernetes.io"].(map[string]any); ok {
		if w, ok := k8s["warnafter"].(float64); ok {
			k8s["warnafter"] = w - iat
		}
	}
	for _, k := range []string{"exp", "iat", "nbf"} {
		delete(c, k)
	}
	if c["jti"] != nil {
		c["jti"] = "set"
	}
	if k8s, ok := c["kubernetes.io"].(map[string]any); ok {
		for _, ref := range []string{"pod", "serviceaccount", "node"} {
			if m, ok := k8s[ref].(map[string]any); ok && m["uid"] != nil {
				m["uid"] = "set"
			}
		}
	}
	return tok
}

func keysOf(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func writeRSAKey(t *testing.T, path string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// load --apiserver: the copies of the pod are created through the API
// too (their tokens come from the TokenRequest API, which knows only pods
// it has), and the driver writes a status for each.
func TestAPIServerLoad(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	sim, root := startCommandWithDriver(t, "load", work, sample(t, "apiserver"), "--replicas", "2")
	r := sim.wait(t, simTimeout)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r)
	}
	for _, name := range []string{"web-default-vault-db", "web-r1-default-vault-db", "web-r2-default-vault-db"} {
		if !strings.Contains(r.Stdout, "create secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io default/"+name) {
			t.Errorf("the summary lacks the status %s:\n%s", name, r.Stdout)
		}
	}
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
}
