package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// tokensCLI runs `csi-kubelet-sim tokens ARGS` as main does, with stdin.
func tokensCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"tokens"}, args...), session.Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

// tokensOK runs the command and fails the test unless it exits 0.
func tokensOK(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := tokensCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("tokens %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out
}

// kidOf computes the kid of a PKIX public key PEM file with the standard
// library only.
func kidOf(t *testing.T, pubFile string) string {
	t.Helper()
	data, err := os.ReadFile(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PUBLIC KEY" {
		t.Fatalf("%s: not a PUBLIC KEY PEM", pubFile)
	}
	if _, err := x509.ParsePKIXPublicKey(b.Bytes); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func TestTokensKeygen(t *testing.T) {
	for _, tc := range []struct {
		typ     string
		wantPEM string
	}{
		{"rsa", "RSA PRIVATE KEY"},
		{"ecdsa", "EC PRIVATE KEY"},
		{"p256", "EC PRIVATE KEY"},
		{"p384", "EC PRIVATE KEY"},
		{"p521", "EC PRIVATE KEY"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			dir := t.TempDir()
			priv, pub := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
			out := tokensOK(t, "keygen", "--type", tc.typ, "--private-key", priv, "--public-key", pub)
			if out != kidOf(t, pub)+"\n" {
				t.Errorf("printed %q, want the kid %s", out, kidOf(t, pub))
			}
			for file, mode := range map[string]os.FileMode{priv: 0o600, pub: 0o644} {
				fi, err := os.Stat(file)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != mode {
					t.Errorf("%s: mode %v, want %v", file, fi.Mode().Perm(), mode)
				}
			}
			data, _ := os.ReadFile(priv)
			if b, _ := pem.Decode(data); b == nil || b.Type != tc.wantPEM {
				t.Errorf("private key PEM %q", data[:min(len(data), 40)])
			}
		})
	}
}

func TestTokensKeygenErrors(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.key")
	os.WriteFile(existing, []byte("x"), 0o600)
	fresh := filepath.Join(dir, "fresh.key")
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no private key", []string{"keygen"}, 2, "csi-kubelet-sim: tokens keygen: --private-key is required\n"},
		{"exists", []string{"keygen", "--private-key", existing}, 2, "csi-kubelet-sim: --private-key " + existing + ": file exists (--force replaces it)\n"},
		{"bad type", []string{"keygen", "--private-key", fresh, "--type", "dsa"}, 2,
			"csi-kubelet-sim: --type: unknown key kind \"dsa\" (want rsa, rsa3072, rsa4096, ecdsa/p256, p384 or p521)\n"},
		{"no dir", []string{"keygen", "--private-key", filepath.Join(dir, "nope", "k")}, 2,
			"csi-kubelet-sim: --private-key " + filepath.Join(dir, "nope", "k") + ": no such directory " + filepath.Join(dir, "nope") + "\n"},
		{"same file", []string{"keygen", "--private-key", fresh, "--public-key", fresh}, 2,
			"csi-kubelet-sim: tokens keygen: --public-key and --private-key are the same file\n"},
		{"arguments", []string{"keygen", "--private-key", fresh, "extra"}, 2, "csi-kubelet-sim: tokens keygen: unexpected arguments [extra] (it reads no files)\n"},
		{"force", []string{"keygen", "--private-key", existing, "--type", "p256", "--force"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := tokensCLI(t, "", tc.args...)
			if code != tc.wantCode || errs != tc.wantErr {
				t.Errorf("exit %d, stderr %q\nwant %d, %q", code, errs, tc.wantCode, tc.wantErr)
			}
		})
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a failed keygen wrote a key")
	}
}

// tokenEnv is a key pair and its JWKS file, made by the commands.
type tokenEnv struct {
	dir, priv, pub, jwks, kid string
}

func newTokenEnv(t *testing.T, typ string) *tokenEnv {
	t.Helper()
	dir := t.TempDir()
	e := &tokenEnv{dir: dir, priv: filepath.Join(dir, "sa.key"), pub: filepath.Join(dir, "sa.pub"), jwks: filepath.Join(dir, "jwks.json")}
	e.kid = strings.TrimSpace(tokensOK(t, "keygen", "--type", typ, "--private-key", e.priv, "--public-key", e.pub))
	if err := os.WriteFile(e.jwks, []byte(tokensOK(t, "jwks", "--key", e.pub)), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// mint makes a token for pod web-0 with the fixed clock and extra flags.
func (e *tokenEnv) mint(t *testing.T, extra ...string) string {
	t.Helper()
	args := append([]string{"mint", "--service-account-key-file", e.priv, "--pod", "web-0",
		"--pod-uid", "c0ffee00-1111-4222-8333-444455556666", "--now", "2026-01-02T14:04:05Z"}, extra...)
	out := tokensOK(t, args...)
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("mint printed %q", out)
	}
	return strings.TrimSuffix(out, "\n")
}

type verifiedDoc struct {
	Header map[string]any `json:"header"`
	Claims map[string]any `json:"claims"`
}

func TestTokensMintVerify(t *testing.T) {
	e := newTokenEnv(t, "p256")
	tok := e.mint(t, "--audience", "vault", "--node", "node-1", "--node-uid", "a1b2c3d4-0000-4000-8000-000000000001",
		"--service-account", "builder", "-n", "ci")
	apiTok := e.mint(t, "--api-audiences", "https://api.example,kube")
	extended := e.mint(t, "--expiration-seconds", "3607")
	past := e.mint(t, "--now", "2026-01-01T00:00:00Z")
	parts := strings.Split(tok, ".")
	tampered := parts[0] + "." + parts[1][:len(parts[1])-2] + "AA." + parts[2]

	other := newTokenEnv(t, "rsa")
	const in10m = "2026-01-02T14:14:05Z"

	for _, tc := range []struct {
		name       string
		stdin      string
		args       []string
		wantCode   int
		wantStderr string // substring
		wantAud    []any
		wantKube   string // JSON of the kubernetes.io claim
	}{
		{name: "jwks", args: []string{"--jwks", e.jwks, "--audience", "vault", "--issuer", "https://kubernetes.default.svc.cluster.local", "--now", in10m, tok},
			wantAud: []any{"vault"},
			wantKube: `{"namespace":"ci","node":{"name":"node-1","uid":"a1b2c3d4-0000-4000-8000-000000000001"},` +
				`"pod":{"name":"web-0","uid":"c0ffee00-1111-4222-8333-444455556666"},` +
				`"serviceaccount":{"name":"builder","uid":"` + stableUIDForTest("ServiceAccount", "ci", "builder") + `"}}`},
		{name: "public key", args: []string{"--key", e.pub, "--now", in10m, tok}, wantAud: []any{"vault"}},
		{name: "private key", args: []string{"--key", e.priv, "--now", in10m, tok}, wantAud: []any{"vault"}},
		{name: "several keys", args: []string{"--key", other.pub, "--key", e.pub, "--now", in10m, tok}, wantAud: []any{"vault"}},
		{name: "stdin", stdin: tok + "\n", args: []string{"--jwks", e.jwks, "--now", in10m, "-"}, wantAud: []any{"vault"}},
		{name: "API audiences", args: []string{"--jwks", e.jwks, "--audience", "kube", "--now", in10m, apiTok}, wantAud: []any{"https://api.example", "kube"}},
		{name: "extended", args: []string{"--jwks", e.jwks, "--now", "2026-06-01T00:00:00Z", extended}, wantAud: []any{"https://kubernetes.default.svc.cluster.local"},
			wantStderr: "warning: the token is past its kubernetes.io.warnafter 2026-01-02T15:04:12Z"},

		{name: "wrong audience", args: []string{"--jwks", e.jwks, "--audience", "s3", "--now", in10m, tok}, wantCode: 1,
			wantStderr: `csi-kubelet-sim: invalid token: token audiences are invalid for the target audiences: aud ["vault"], want one of ["s3"]` + "\n"},
		{name: "wrong issuer", args: []string{"--jwks", e.jwks, "--issuer", "https://other", "--now", in10m, tok}, wantCode: 1,
			wantStderr: "token issuer is invalid"},
		{name: "expired", args: []string{"--jwks", e.jwks, "--now", in10m, past}, wantCode: 1,
			wantStderr: "csi-kubelet-sim: invalid token: service account token has expired: exp 2026-01-01T01:00:00Z, now 2026-01-02T14:14:05Z (leeway 1m0s)\n"},
		{name: "expired now", args: []string{"--jwks", e.jwks, past}, wantCode: 1, wantStderr: "service account token has expired"},
		{name: "not yet valid", args: []string{"--jwks", e.jwks, "--now", "2026-01-02T14:00:00Z", tok}, wantCode: 1,
			wantStderr: "service account token is not valid yet: nbf 2026-01-02T14:04:05Z"},
		{name: "tampered", args: []string{"--jwks", e.jwks, "--now", in10m, tampered}, wantCode: 1, wantStderr: "csi-kubelet-sim: invalid token: invalid signature"},
		{name: "other key", args: []string{"--jwks", other.jwks, "--now", in10m, tok}, wantCode: 1,
			wantStderr: `csi-kubelet-sim: invalid token: invalid signature: no key with kid "` + e.kid + `" (have ["` + other.kid + `"])` + "\n"},
		{name: "garbage", args: []string{"--jwks", e.jwks, "not-a-token"}, wantCode: 1, wantStderr: "csi-kubelet-sim: invalid token: not a compact JWS"},

		{name: "no keys", args: []string{tok}, wantCode: 2, wantStderr: "csi-kubelet-sim: tokens verify: give exactly one of --key, --jwks or --jwks-url\n"},
		{name: "two key sources", args: []string{"--key", e.pub, "--jwks", e.jwks, tok}, wantCode: 2, wantStderr: "give exactly one of"},
		{name: "no token", args: []string{"--jwks", e.jwks}, wantCode: 2, wantStderr: "want one TOKEN argument (or - for stdin), got 0"},
		{name: "empty stdin", args: []string{"--jwks", e.jwks, "-"}, wantCode: 2, wantStderr: "tokens verify: empty token"},
		{name: "remote jwks", args: []string{"--jwks-url", "https://example.com/openid/v1/jwks", tok}, wantCode: 2,
			wantStderr: "csi-kubelet-sim: --jwks-url https://example.com/openid/v1/jwks: only loopback hosts are fetched\n"},
		{name: "bad jwks file", args: []string{"--jwks", e.pub, tok}, wantCode: 2, wantStderr: "csi-kubelet-sim: --jwks " + e.pub + ": not a JWKS: "},
		{name: "missing key file", args: []string{"--key", filepath.Join(e.dir, "nope"), tok}, wantCode: 2,
			wantStderr: "csi-kubelet-sim: --key " + filepath.Join(e.dir, "nope") + ": no such file or directory\n"},
		{name: "bad now", args: []string{"--jwks", e.jwks, "--now", "yesterday", tok}, wantCode: 2, wantStderr: "want an RFC 3339 time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := tokensCLI(t, tc.stdin, append([]string{"verify"}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.wantCode, errs)
			}
			if tc.wantStderr != "" && !strings.Contains(errs, tc.wantStderr) {
				t.Errorf("stderr %q\nwant %q", errs, tc.wantStderr)
			}
			if tc.wantStderr == "" && errs != "" {
				t.Errorf("stderr %q", errs)
			}
			if code != 0 {
				if out != "" {
					t.Errorf("stdout %q on failure", out)
				}
				return
			}
			var doc verifiedDoc
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if !strings.Contains(out, "\n  \"header\": {\n    \"alg\": \"ES256\",\n    \"kid\": ") {
				t.Errorf("not indented, or header not first:\n%s", out)
			}
			if want := map[string]any{"alg": "ES256", "kid": e.kid}; !reflect.DeepEqual(doc.Header, want) {
				t.Errorf("header %v, want %v", doc.Header, want)
			}
			if got := doc.Claims["aud"]; !reflect.DeepEqual(got, tc.wantAud) {
				t.Errorf("aud %v, want %v", got, tc.wantAud)
			}
			if tc.wantKube != "" {
				got, _ := json.Marshal(doc.Claims["kubernetes.io"])
				if string(got) != tc.wantKube {
					t.Errorf("kubernetes.io\n got %s\nwant %s", got, tc.wantKube)
				}
			}
		})
	}
}

// stableUIDForTest is manifests.StableUID written out, so that the
// expectation does not call the code under test.
func stableUIDForTest(kind, ns, name string) string {
	h := sha256.Sum256([]byte("csi-kubelet-sim/" + kind + "/" + ns + "/" + name))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	x := hex.EncodeToString
	return x(h[0:4]) + "-" + x(h[4:6]) + "-" + x(h[6:8]) + "-" + x(h[8:10]) + "-" + x(h[10:16])
}

func TestTokensMintJSON(t *testing.T) {
	e := newTokenEnv(t, "rsa")
	out := e.mint(t, "-o", "json", "--expiration-seconds", "7200", "--audience", "vault")
	var st struct {
		Token               string `json:"token"`
		ExpirationTimestamp string `json:"expirationTimestamp"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.ExpirationTimestamp != "2026-01-02T16:04:05Z" || strings.Count(st.Token, ".") != 2 {
		t.Errorf("status %s", out)
	}
	if !strings.HasPrefix(out, `{"token":"`) {
		t.Errorf("field order: %s", out)
	}
	vout := tokensOK(t, "verify", "--jwks", e.jwks, "--now", "2026-01-02T16:00:00Z", st.Token)
	var doc verifiedDoc
	json.Unmarshal([]byte(vout), &doc)
	if doc.Claims["exp"] != float64(1767369845) || doc.Claims["iat"] != float64(1767362645) || doc.Header["alg"] != "RS256" {
		t.Errorf("claims %v header %v", doc.Claims, doc.Header)
	}
	if _, ok := doc.Claims["jti"]; !ok {
		t.Error("no jti")
	}
}

func TestTokensMintErrors(t *testing.T) {
	e := newTokenEnv(t, "p256")
	notPEM := filepath.Join(e.dir, "x")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	pod := []string{"--pod", "web-0", "--pod-uid", "u"}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no key", pod, "csi-kubelet-sim: tokens mint: --service-account-key-file is required\n"},
		{"not PEM", append([]string{"--service-account-key-file", notPEM}, pod...), "csi-kubelet-sim: --service-account-key-file " + notPEM + ": no PEM block\n"},
		{"missing", append([]string{"--service-account-key-file", notPEM + ".nope"}, pod...),
			"csi-kubelet-sim: --service-account-key-file " + notPEM + ".nope: no such file or directory\n"},
		{"public key", append([]string{"--service-account-key-file", e.pub}, pod...),
			"csi-kubelet-sim: --service-account-key-file " + e.pub + `: no private key PEM block (found "PUBLIC KEY"; want "RSA PRIVATE KEY", "EC PRIVATE KEY" or "PRIVATE KEY")` + "\n"},
		{"no pod", []string{"--service-account-key-file", e.priv}, "csi-kubelet-sim: tokens mint: --pod and --pod-uid are required (the kubelet binds every token to its pod)\n"},
		{"too short", append([]string{"--service-account-key-file", e.priv, "--expiration-seconds", "60"}, pod...),
			"csi-kubelet-sim: TokenRequest: TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes\n"},
		{"not a number", append([]string{"--service-account-key-file", e.priv, "--expiration-seconds", "1h"}, pod...), "want an integer"},
		{"output", append([]string{"--service-account-key-file", e.priv, "-o", "xml"}, pod...), "csi-kubelet-sim: --output \"xml\": want text, json, yaml, jsonpath=TEMPLATE, jsonpath-file=FILE, go-template=TEMPLATE or go-template-file=FILE\n"},
		{"node uid alone", append([]string{"--service-account-key-file", e.priv, "--node-uid", "x"}, pod...), "csi-kubelet-sim: tokens mint: --node-uid needs --node\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := tokensCLI(t, "", append([]string{"mint"}, tc.args...)...)
			if code != 2 || out != "" || !strings.Contains(errs, tc.wantErr) {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant 2 and %q", code, out, errs, tc.wantErr)
			}
			if strings.Contains(errs, "PRIVATE KEY-----") {
				t.Error("key material in the error")
			}
		})
	}
}

func TestTokensJWKS(t *testing.T) {
	// The testdata of tokens/ were made with openssl.
	rsaPub := filepath.Join("..", "..", "tokens", "testdata", "rsa2048.pub")
	p256 := filepath.Join("..", "..", "tokens", "testdata", "p256.pem")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "tokens", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	out := tokensOK(t, "jwks", "--key", rsaPub)
	if out != read("jwks-rsa2048.json")+"\n" {
		t.Errorf("jwks\n got %s\nwant %s", out, read("jwks-rsa2048.json"))
	}
	out = tokensOK(t, "jwks", "--key", p256, "--key", rsaPub)
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal([]byte(out), &set); err != nil || len(set.Keys) != 2 || set.Keys[0]["kty"] != "EC" || set.Keys[1]["kty"] != "RSA" {
		t.Errorf("two keys: %v %s", err, out)
	}
	if strings.Contains(out, `"d"`) {
		t.Error("private key material in the JWKS")
	}

	ed := filepath.Join("..", "..", "tokens", "testdata", "ed25519-pkcs8.pem")
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{nil, "csi-kubelet-sim: tokens jwks: --key is required\n"},
		{[]string{"--key", ed}, "csi-kubelet-sim: --key " + ed + `: "PRIVATE KEY" block: unsupported key type ed25519.PublicKey, must be RSA or ECDSA` + "\n"},
		{[]string{rsaPub}, "csi-kubelet-sim: tokens jwks: unexpected arguments [" + rsaPub + "] (it reads no files)\n"},
	} {
		_, errs, code := tokensCLI(t, "", append([]string{"jwks"}, tc.args...)...)
		if code != 2 || errs != tc.wantErr {
			t.Errorf("jwks %v: exit %d, %q\nwant 2, %q", tc.args, code, errs, tc.wantErr)
		}
	}
}

// lineBuffer is a writer the test reads while the command writes.
type lineBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
	part  []byte
}

func newLineBuffer() *lineBuffer { return &lineBuffer{lines: make(chan string, 16)} }

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	b.part = append(b.part, p...)
	for {
		i := bytes.IndexByte(b.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case b.lines <- string(b.part[:i]):
		default:
		}
		b.part = b.part[i+1:]
	}
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServe runs `tokens serve ARGS` until the test ends and returns its
// URL (its first line of output).
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := newLineBuffer(), newLineBuffer()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"tokens", "serve"}, args...), session.Streams{In: strings.NewReader(""), Out: out, Err: errb})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exit %d: %s", code, errb.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop")
		}
	})
	select {
	case line := <-out.lines:
		return line
	case code := <-done:
		t.Fatalf("serve exit %d: %s", code, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve printed no URL")
	}
	return ""
}

func TestTokensServe(t *testing.T) {
	e := newTokenEnv(t, "p256")
	other := newTokenEnv(t, "rsa")
	base := startServe(t, "--service-account-key-file", e.priv, "--service-account-key-file", other.pub)
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("URL %q", base)
	}

	fetch := func(path string) (string, http.Header) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return string(b), resp.Header
	}

	body, h := fetch("/.well-known/openid-configuration")
	if h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("discovery headers %v", h)
	}
	var disc map[string]any
	if err := json.Unmarshal([]byte(body), &disc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"issuer":                                "https://kubernetes.default.svc.cluster.local",
		"jwks_uri":                              base + "/openid/v1/jwks",
		"response_types_supported":              []any{"id_token"},
		"subject_types_supported":               []any{"public"},
		"id_token_signing_alg_values_supported": []any{"ES256", "RS256"},
	}
	if !reflect.DeepEqual(disc, want) {
		t.Errorf("discovery\n got %v\nwant %v", disc, want)
	}

	body, h = fetch("/openid/v1/jwks")
	if h.Get("Content-Type") != "application/jwk-set+json" || h.Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("jwks headers %v", h)
	}
	if wantSet := tokensOK(t, "jwks", "--key", e.pub, "--key", other.pub); body+"\n" != wantSet {
		t.Errorf("served JWKS\n%s\nwant\n%s", body, wantSet)
	}

	tok := e.mint(t, "--audience", "vault")
	for _, tc := range []struct {
		name     string
		token    string
		wantCode int
	}{
		{"valid", tok, 0},
		{"other audience", e.mint(t, "--audience", "s3"), 1},
	} {
		_, errs, code := tokensCLI(t, "", "verify", "--jwks-url", base+"/openid/v1/jwks", "--audience", "vault", "--now", "2026-01-02T14:05:00Z", tc.token)
		if code != tc.wantCode {
			t.Errorf("%s: exit %d, want %d: %s", tc.name, code, tc.wantCode, errs)
		}
	}
	_, errs, code := tokensCLI(t, "", "verify", "--jwks-url", base+"/nothing", tok)
	if code != 3 || errs != "csi-kubelet-sim: --jwks-url "+base+"/nothing: GET: 404 Not Found\n" {
		t.Errorf("404: exit %d, %q", code, errs)
	}
}

func TestTokensServeErrors(t *testing.T) {
	e := newTokenEnv(t, "p256")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no keys", nil, 2, "csi-kubelet-sim: tokens serve: --service-account-key-file is required\n"},
		{"all interfaces", []string{"--service-account-key-file", e.pub, "--addr", "0.0.0.0:0"}, 2,
			"csi-kubelet-sim: --addr: \"0.0.0.0:0\" is not a loopback address (--allow-non-loopback to serve on it anyway)\n"},
		{"no port", []string{"--service-account-key-file", e.pub, "--addr", "127.0.0.1"}, 2, "missing port in address"},
		{"bad key", []string{"--service-account-key-file", e.jwks}, 2, "csi-kubelet-sim: --service-account-key-file " + e.jwks + ": no PEM block\n"},
		{"bad issuer", []string{"--service-account-key-file", e.pub, "--issuer", "https://x/?q"}, 2,
			"csi-kubelet-sim: issuer URL may not include a query, got: https://x/?q\n"},
		{"port taken", []string{"--service-account-key-file", e.pub, "--addr", busy}, 3, "csi-kubelet-sim: --addr: listen tcp " + busy + ": "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := tokensCLI(t, "", append([]string{"serve"}, tc.args...)...)
			if code != tc.wantCode || out != "" || !strings.Contains(errs, tc.wantErr) {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant %d, %q", code, out, errs, tc.wantCode, tc.wantErr)
			}
		})
	}
}

func TestTokensServeHTTPIssuer(t *testing.T) {
	e := newTokenEnv(t, "p256")
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := newLineBuffer(), newLineBuffer()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"tokens", "serve", "--service-account-key-file", e.pub, "--issuer", "http://127.0.0.1:1"},
			session.Streams{In: strings.NewReader(""), Out: out, Err: errb})
	}()
	select {
	case <-out.lines:
	case code := <-done:
		t.Fatalf("serve: exit %d: %s", code, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatal("no URL")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve: exit %d: %s", code, errb.String())
	}
	first, _, _ := bufio.NewReader(strings.NewReader(errb.String())).ReadLine()
	if string(first) != "warning: the API server serves discovery only for an https issuer" {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestTokensDispatch(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantCode   int
		wantOut    string // prefix
		wantStderr string // substring
	}{
		{nil, 2, "", "csi-kubelet-sim: tokens: a command is needed\n"},
		{[]string{"frobnicate"}, 2, "", "csi-kubelet-sim: tokens: unknown command \"frobnicate\"; 'csi-kubelet-sim tokens --help' lists them\n"},
		{[]string{"help"}, 0, "Service-account tokens", ""},
		{[]string{"--help"}, 0, "Service-account tokens", ""},
		{[]string{"mint", "--help"}, 0, "Issue the service-account token", ""},
		{[]string{"verify", "--bogus"}, 2, "", "unknown flag: --bogus"},
	} {
		out, errs, code := tokensCLI(t, "", tc.args...)
		if code != tc.wantCode || !strings.HasPrefix(out, tc.wantOut) || !strings.Contains(errs, tc.wantStderr) {
			t.Errorf("tokens %v: exit %d, stdout %q, stderr %q", tc.args, code, out, errs)
		}
	}
}
