package tokens_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

func get(t *testing.T, h http.Handler, method, target, host string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	if host != "" {
		r.Host = host
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOIDCHandler(t *testing.T) {
	rsaK, ecK := keys(t)
	const jwksURI = "https://issuer.example/openid/v1/jwks"
	h, err := tokens.NewOIDCHandler(iss, jwksURI, rsaK.Public(), ecK)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, host string
		wantCode                 int
		wantType, wantBody       string
	}{
		{"discovery", "GET", "/.well-known/openid-configuration", "", 200, "application/json",
			`{"issuer":"https://kubernetes.default.svc.cluster.local","jwks_uri":"https://issuer.example/openid/v1/jwks",` +
				`"response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256","RS256"]}`},
		{"jwks", "GET", "/openid/v1/jwks", "", 200, "application/jwk-set+json",
			strings.TrimSuffix(readTestdata(t, "jwks-rsa2048.json"), "]}") + "," +
				strings.TrimPrefix(readTestdata(t, "jwks-p256.json"), `{"keys":[`)},
		{"head", "HEAD", "/openid/v1/jwks", "", 200, "application/jwk-set+json", ""},
		{"post", "POST", "/openid/v1/jwks", "", 405, "", ""},
		{"other path", "GET", "/openid/v1/jwks/x", "", 404, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := get(t, h, tc.method, tc.path, tc.host)
			if r.StatusCode != tc.wantCode {
				t.Fatalf("status %d, want %d", r.StatusCode, tc.wantCode)
			}
			if tc.wantCode != 200 {
				return
			}
			if got := r.Header.Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
			if got := r.Header.Get("Cache-Control"); got != "public, max-age=3600" {
				t.Errorf("Cache-Control %q", got)
			}
			if got := body(t, r); tc.method == "GET" && got != tc.wantBody {
				t.Errorf("body\n got %s\nwant %s", got, tc.wantBody)
			}
		})
	}
}

func TestOIDCHandlerDerivesJWKSURI(t *testing.T) {
	_, ecK := keys(t)
	h, err := tokens.NewOIDCHandler("http://127.0.0.1:8443", "", ecK)
	if err != nil {
		t.Fatal(err)
	}
	r := get(t, h, "GET", "/.well-known/openid-configuration", "127.0.0.1:8443")
	want := `{"issuer":"http://127.0.0.1:8443","jwks_uri":"http://127.0.0.1:8443/openid/v1/jwks",` +
		`"response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256"]}`
	if got := body(t, r); got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
}

func TestNewOIDCHandlerErrors(t *testing.T) {
	_, ecK := keys(t)
	_, edK, _ := ed25519.GenerateKey(nil)
	for _, tc := range []struct {
		name, issuer, jwks string
		keys               []crypto.PublicKey
		want               string
	}{
		{"empty issuer", "", "", []crypto.PublicKey{ecK}, "empty issuer URL"},
		{"query", "https://x/?a=b", "", []crypto.PublicKey{ecK}, "issuer URL may not include a query, got: https://x/?a=b"},
		{"fragment", "https://x/#f", "", []crypto.PublicKey{ecK}, "issuer URL may not include a fragment, got: https://x/#f"},
		{"scheme", "ftp://x", "", []crypto.PublicKey{ecK}, "issuer URL must use https (or http), got: ftp://x"},
		{"not a URL", "kubernetes", "", []crypto.PublicKey{ecK}, "issuer URL must use https (or http), got: kubernetes"},
		{"jwks uri", iss, "https://x/jwks?x=1", []crypto.PublicKey{ecK}, "jwks_uri URL may not include a query, got: https://x/jwks?x=1"},
		{"no keys", iss, "", nil, "no keys provided for validating keyset"},
		{"ed25519", iss, "", []crypto.PublicKey{edK.Public()}, "error constructing JWK for key #0: unsupported key type ed25519.PublicKey, must be RSA or ECDSA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tokens.NewOIDCHandler(tc.issuer, tc.jwks, tc.keys...)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestServeOIDC(t *testing.T) {
	_, ecK := keys(t)
	h, err := tokens.NewOIDCHandler(iss, "", ecK)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, wait, err := tokens.ServeOIDC(ctx, "127.0.0.1:0", h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("url %s", base)
	}
	resp, err := http.Get(base + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	got := body(t, resp)
	resp.Body.Close()
	if !strings.Contains(got, `"jwks_uri":"`+base+`/openid/v1/jwks"`) {
		t.Errorf("discovery %s", got)
	}

	// The port is taken: listening again fails.
	if _, _, err := tokens.ServeOIDC(ctx, strings.TrimPrefix(base, "http://"), h); err == nil {
		t.Error("second listener on the same port")
	}

	cancel()
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
	if wait() != nil {
		t.Error("second wait")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second); err == nil {
		c.Close()
		t.Error("still listening after ctx was cancelled")
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:0": true, "127.1.2.3:80": true, "[::1]:8080": true, "localhost:1": true, "LOCALHOST:1": true,
		":8080": false, "0.0.0.0:0": false, "[::]:0": false, "10.0.0.1:80": false, "example.com:80": false,
	} {
		if got := tokens.CheckLoopbackAddr(addr) == nil; got != want {
			t.Errorf("CheckLoopbackAddr(%q) ok=%v, want %v", addr, got, want)
		}
	}
	if err := tokens.CheckLoopbackAddr("127.0.0.1"); err == nil {
		t.Error("address without port accepted")
	}
	if err := tokens.CheckLoopbackAddr("0.0.0.0:80"); err == nil || err.Error() != `"0.0.0.0:80" is not a loopback address` {
		t.Errorf("error %v", err)
	}
	if !tokens.IsLoopbackHost("[::1]") || tokens.IsLoopbackHost("") {
		t.Error("IsLoopbackHost")
	}
}
