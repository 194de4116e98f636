package tokens_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// Fixed inputs. t0+3600 s is 2026-01-02T15:04:05Z, the example of 4.3.
var t0 = time.Date(2026, 1, 2, 14, 4, 5, 123456789, time.UTC)

const (
	t0Unix  = 1767362645 // date -u -d 2026-01-02T14:04:05Z +%s
	fixedJT = "0f8fad5b-d9cb-469f-a165-70867728950e"
	saUID   = "8e1b0bd5-0d1a-4a3f-9b6c-2f4e6a7d9c01"
	podUID  = "c0ffee00-1111-4222-8333-444455556666"
	nodeUID = "a1b2c3d4-0000-4000-8000-000000000001"
	iss     = "https://kubernetes.default.svc.cluster.local"

	// kid of testdata keys, computed by openssl (see testdata/README.md).
	kidRSA  = "378JqMj9x3jGZ-G2podBAdv5uIY4lExVE0mPGrYsQcE"
	kidP256 = "GQObXobL1DSEpyEjidUblYSTR2LaeF6GfMspp2BFbOA"
)

// testKey reads a testdata key with the standard library only (not LoadKey).
func testKey(t testing.TB, name string) crypto.Signer {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			t.Fatalf("%s: no key", name)
		}
		switch b.Type {
		case "RSA PRIVATE KEY":
			k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return k
		case "EC PRIVATE KEY":
			k, err := x509.ParseECPrivateKey(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
	}
}

var (
	keysOnce sync.Once
	rsaKey   crypto.Signer
	p256Key  crypto.Signer
)

func keys(t testing.TB) (crypto.Signer, crypto.Signer) {
	keysOnce.Do(func() {
		rsaKey = testKey(t, "rsa2048.pem")
		p256Key = testKey(t, "p256.pem")
	})
	return rsaKey, p256Key
}

// fakeClock is shared by an Issuer and a Manager.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// baseConfig: the 1.37 defaults, the fixed clock and jti, a known
// ServiceAccount UID and a pod scheduled on node-1 (Node object known).
func baseConfig(key crypto.Signer, clock func() time.Time) tokens.IssuerConfig {
	cfg := tokens.DefaultIssuerConfig()
	cfg.Key = key
	cfg.Now = clock
	cfg.NewUID = func() string { return fixedJT }
	cfg.ServiceAccountUID = func(ns, name string) (types.UID, bool) {
		if ns == "default" && name == "default" {
			return saUID, true
		}
		return "", false
	}
	cfg.PodNode = func(ns, pod string) (string, types.UID, bool) {
		if ns == "default" && pod == "web-0" {
			return "node-1", nodeUID, true
		}
		return "", "", false
	}
	return cfg
}

func newIssuer(t testing.TB, cfg tokens.IssuerConfig) *tokens.Issuer {
	t.Helper()
	i, err := tokens.NewIssuer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// podRequest is what the kubelet sends for a CSIDriver tokenRequests entry.
func podRequest(audience string, exp *int64) *authenticationv1.TokenRequest {
	auds := []string{audience}
	if audience == "" {
		auds = []string{}
	}
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         auds,
		ExpirationSeconds: exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: podUID},
	}}
}

func issue(t testing.TB, i tokens.TokenGetter, req *authenticationv1.TokenRequest) *authenticationv1.TokenRequest {
	t.Helper()
	out, err := i.Token(context.Background(), "default", "default", req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// segments splits a compact JWS and decodes header and payload.
func segments(t testing.TB, tok string) (header, payload, sig []byte, signingInput string) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d segments", len(parts))
	}
	dec := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("segment %q: %v", s, err)
		}
		return b
	}
	return dec(parts[0]), dec(parts[1]), dec(parts[2]), parts[0] + "." + parts[1]
}

// verifyJose checks the token with go-jose v4 against pub and returns the
// verified claims as generic JSON.
func verifyJose(t testing.TB, tok string, pub crypto.PublicKey, alg jose.SignatureAlgorithm) (map[string]any, jose.Header) {
	t.Helper()
	parsed, err := josejwt.ParseSigned(tok, []jose.SignatureAlgorithm{alg})
	if err != nil {
		t.Fatalf("go-jose parse: %v", err)
	}
	var m map[string]any
	var std josejwt.Claims
	if err := parsed.Claims(pub, &m, &std); err != nil {
		t.Fatalf("go-jose verify: %v", err)
	}
	return m, parsed.Headers[0]
}

// verifyByHand checks the signature with crypto/rsa or crypto/ecdsa.
func verifyByHand(t testing.TB, tok string, pub crypto.PublicKey) {
	t.Helper()
	_, _, sig, input := segments(t, tok)
	switch k := pub.(type) {
	case *rsa.PublicKey:
		d := sha256.Sum256([]byte(input))
		if err := rsa.VerifyPKCS1v15(k, crypto.SHA256, d[:], sig); err != nil {
			t.Fatalf("RS256 signature: %v", err)
		}
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			t.Fatalf("ECDSA signature is %d bytes, want r||s of %d", len(sig), 2*size)
		}
		var d []byte
		switch size {
		case 32:
			h := sha256.Sum256([]byte(input))
			d = h[:]
		default:
			t.Fatalf("hand verification only for P-256")
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		if !ecdsa.Verify(k, d, r, s) {
			t.Fatal("ES256 signature does not verify")
		}
	default:
		t.Fatalf("key %T", pub)
	}
}

func jsonEqual(t testing.TB, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}
