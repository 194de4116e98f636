package tokens_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

func jwksKeys(t *testing.T, name string) []tokens.VerificationKey {
	t.Helper()
	ks, err := tokens.ParseJWKS([]byte(readTestdata(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func at(d time.Duration) func() time.Time { return func() time.Time { return t0.Add(d) } }

func TestVerify(t *testing.T) {
	rsaK, ecK := keys(t)
	rsaTok := issue(t, newIssuer(t, baseConfig(rsaK, at(0))), podRequest("vault", nil)).Status.Token
	ecTok := issue(t, newIssuer(t, baseConfig(ecK, at(0))), podRequest("", nil)).Status.Token
	rsaJWKS, ecJWKS := jwksKeys(t, "jwks-rsa2048.json"), jwksKeys(t, "jwks-p256.json")
	both := append(append([]tokens.VerificationKey{}, ecJWKS...), rsaJWKS...)
	fromPEM, err := tokens.PublicVerificationKeys(rsaK.Public(), ecK)
	if err != nil {
		t.Fatal(err)
	}
	if fromPEM[0].KeyID != kidRSA || fromPEM[1].KeyID != kidP256 {
		t.Fatalf("kids %q %q", fromPEM[0].KeyID, fromPEM[1].KeyID)
	}
	// exp of both tokens is t0Unix+3600; nbf and iat t0Unix. t0 has a
	// fraction of .123456789 s.
	const frac = 123456789 * time.Nanosecond

	for _, tc := range []struct {
		name    string
		token   string
		opts    tokens.VerifyOptions
		wantKid string
		wantErr error
		wantMsg string
	}{
		{name: "rsa jwks", token: rsaTok, opts: tokens.VerifyOptions{Keys: rsaJWKS, Now: at(time.Minute)}, wantKid: kidRSA},
		{name: "ec jwks", token: ecTok, opts: tokens.VerifyOptions{Keys: ecJWKS, Now: at(time.Minute)}, wantKid: kidP256},
		{name: "kid picks the key", token: rsaTok, opts: tokens.VerifyOptions{Keys: both, Now: at(0)}, wantKid: kidRSA},
		{name: "pem keys", token: ecTok, opts: tokens.VerifyOptions{Keys: fromPEM, Now: at(0)}, wantKid: kidP256},
		{name: "audience and issuer", token: rsaTok, opts: tokens.VerifyOptions{Keys: rsaJWKS, Now: at(0), Audiences: []string{"other", "vault"}, Issuer: iss}, wantKid: kidRSA},
		{name: "API audience", token: ecTok, opts: tokens.VerifyOptions{Keys: ecJWKS, Now: at(0), Audiences: []string{iss}}, wantKid: kidP256},
		{name: "wrong audience", token: rsaTok, opts: tokens.VerifyOptions{Keys: rsaJWKS, Now: at(0), Audiences: []string{"s3"}},
			wantErr: tokens.ErrTokenAudience, wantMsg: `token audiences are invalid for the target audiences: aud ["vault"], want one of ["s3"]`},
		{name: "wrong issuer", token: rsaTok, opts: tokens.VerifyOptions{Keys: rsaJWKS, Now: at(0), Issuer: "https://example.com"},
			wantErr: tokens.ErrTokenIssuer, wantMsg: `token issuer is invalid: iss "https://kubernetes.default.svc.cluster.local", want "https://example.com"`},
		{name: "exp plus leeway", token: rsaTok, opts: tokens.VerifyOptions{Keys: rsaJWKS, Now: at(3660*time.Second - frac)}, wantKid: kidRSA},
		{name: "expired", token: rsaTok, opts: tokens.VerifyOptions{Keys: rsaJWKS, Now: at(3660*time.Second - frac + time.Nanosecond)},
			wantErr: tokens.ErrTokenExpired, wantMsg: "service account token has expired: exp 2026-01-02T15:04:05Z, now 2026-01-02T15:05:05Z (leeway 1m0s)"},
		{name: "no leeway", token: rsaTok, opts: tokens.VerifyOptions{Keys: rsaJWKS, Now: at(3600*time.Second - frac + time.Second), Leeway: -1},
			wantErr: tokens.ErrTokenExpired},
		{name: "nbf minus leeway", token: rsaTok, opts: tokens.VerifyOptions{Keys: rsaJWKS, Now: at(-time.Minute - frac)}, wantKid: kidRSA},
		{name: "not valid yet", token: rsaTok, opts: tokens.VerifyOptions{Keys: rsaJWKS, Now: at(-time.Minute - frac - time.Nanosecond)},
			wantErr: tokens.ErrTokenNotValidYet, wantMsg: "service account token is not valid yet: nbf 2026-01-02T14:04:05Z, now 2026-01-02T14:03:04Z (leeway 1m0s)"},
		{name: "unknown kid", token: rsaTok, opts: tokens.VerifyOptions{Keys: ecJWKS, Now: at(0)},
			wantErr: tokens.ErrTokenSignature, wantMsg: `invalid signature: no key with kid "` + kidRSA + `" (have ["` + kidP256 + `"])`},
		{name: "same kid other key", token: rsaTok, opts: tokens.VerifyOptions{Keys: []tokens.VerificationKey{{KeyID: kidRSA, Key: ecK.Public()}}, Now: at(0)},
			wantErr: tokens.ErrTokenSignature},
		{name: "jwks alg mismatch", token: rsaTok, opts: tokens.VerifyOptions{Keys: []tokens.VerificationKey{{KeyID: kidRSA, Algorithm: "PS256", Key: rsaK.Public()}}, Now: at(0)},
			wantErr: tokens.ErrTokenSignature, wantMsg: `invalid signature: key "` + kidRSA + `" is for PS256, token is RS256`},
		{name: "no keys", token: rsaTok, opts: tokens.VerifyOptions{}, wantMsg: "no verification keys"},
		{name: "not a JWS", token: "abc", opts: tokens.VerifyOptions{Keys: rsaJWKS}, wantMsg: "not a compact JWS: 1 segments, want 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tokens.Verify(tc.token, tc.opts)
			if tc.wantErr != nil || tc.wantMsg != "" {
				if err == nil {
					t.Fatal("no error")
				}
				if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Errorf("error %v, want %v", err, tc.wantErr)
				}
				if tc.wantMsg != "" && err.Error() != tc.wantMsg {
					t.Errorf("error\n got %s\nwant %s", err, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.KeyID != tc.wantKid || v.Key.KeyID != tc.wantKid {
				t.Errorf("kid %q, key %q, want %q", v.KeyID, v.Key.KeyID, tc.wantKid)
			}
			if v.Issuer != iss || v.Subject != "system:serviceaccount:default:default" || v.ID != fixedJT {
				t.Errorf("iss %q sub %q jti %q", v.Issuer, v.Subject, v.ID)
			}
			if v.Expiry.Unix() != t0Unix+3600 || v.IssuedAt.Unix() != t0Unix || v.NotBefore.Unix() != t0Unix {
				t.Errorf("exp %v iat %v nbf %v", v.Expiry, v.IssuedAt, v.NotBefore)
			}
			if v.Kubernetes.Pod == nil || v.Kubernetes.Pod.UID != podUID || v.Kubernetes.Node == nil || v.Kubernetes.Node.UID != nodeUID {
				t.Errorf("kubernetes.io %+v", v.Kubernetes)
			}
			if !v.WarnAfter().IsZero() {
				t.Errorf("warnafter %v", v.WarnAfter())
			}
		})
	}
}

func TestVerifyRawHeaderAndClaims(t *testing.T) {
	rsaK, _ := keys(t)
	tok := issue(t, newIssuer(t, baseConfig(rsaK, at(0))), podRequest("", new(int64(3607)))).Status.Token
	v, err := tokens.Verify(tok, tokens.VerifyOptions{Keys: jwksKeys(t, "jwks-rsa2048.json"), Now: at(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if string(v.Header) != `{"alg":"RS256","kid":"`+kidRSA+`"}` {
		t.Errorf("header %s", v.Header)
	}
	jsonEqual(t, "claims", v.Claims, `{
		"aud":["https://kubernetes.default.svc.cluster.local"],
		"exp":1798898645,"iat":1767362645,"nbf":1767362645,
		"iss":"https://kubernetes.default.svc.cluster.local",
		"jti":"0f8fad5b-d9cb-469f-a165-70867728950e",
		"sub":"system:serviceaccount:default:default",
		"kubernetes.io":{"namespace":"default",
			"node":{"name":"node-1","uid":"a1b2c3d4-0000-4000-8000-000000000001"},
			"pod":{"name":"web-0","uid":"c0ffee00-1111-4222-8333-444455556666"},
			"serviceaccount":{"name":"default","uid":"8e1b0bd5-0d1a-4a3f-9b6c-2f4e6a7d9c01"},
			"warnafter":1767366252}}`)
	if v.WarnAfter().Unix() != t0Unix+3607 {
		t.Errorf("warnafter %v", v.WarnAfter())
	}
}

func TestVerifyRefusesForgeries(t *testing.T) {
	rsaK, _ := keys(t)
	keysJWKS := jwksKeys(t, "jwks-rsa2048.json")
	good := issue(t, newIssuer(t, baseConfig(rsaK, at(0))), podRequest("vault", nil)).Status.Token
	parts := strings.Split(good, ".")

	// Payload swapped for one with another audience, signature kept.
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	forged := strings.Replace(string(payload), `"aud":["vault"]`, `"aud":["s3"]`, 1)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + parts[2]

	// HS256 keyed with the public key's PEM (the classic alg confusion).
	der, _ := x509.MarshalPKIXPublicKey(rsaK.Public())
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hsSigner, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pubPEM}, (&jose.SignerOptions{}).WithHeader("kid", kidRSA))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := josejwt.Signed(hsSigner).Claims(josejwt.Claims{Subject: "x"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."

	// Signed by another P-256 key, claiming the known kid.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherSigner, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: other}, (&jose.SignerOptions{}).WithHeader("kid", kidP256))
	impostor, _ := josejwt.Signed(otherSigner).Claims(josejwt.Claims{Subject: "x"}).Serialize()

	for name, tok := range map[string]string{"tampered": tampered, "HS256": hs, "none": none, "impostor": impostor} {
		t.Run(name, func(t *testing.T) {
			keys := append(jwksKeys(t, "jwks-p256.json"), keysJWKS...)
			_, err := tokens.Verify(tok, tokens.VerifyOptions{Keys: keys, Now: at(0)})
			if !errors.Is(err, tokens.ErrTokenSignature) {
				t.Errorf("error %v", err)
			}
		})
	}
}

func TestVerifyWithoutKid(t *testing.T) {
	// A token without kid is tried against every key (the API server's
	// StaticPublicKeysGetter with an empty key ID).
	_, ecK := keys(t)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: ecK}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := josejwt.Signed(signer).Claims(josejwt.Claims{Issuer: iss, Audience: josejwt.Audience{"a"}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	keys := append(jwksKeys(t, "jwks-rsa2048.json"), jwksKeys(t, "jwks-p256.json")...)
	v, err := tokens.Verify(tok, tokens.VerifyOptions{Keys: keys, Audiences: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if v.KeyID != "" || v.Key.KeyID != kidP256 || !v.Expiry.IsZero() {
		t.Errorf("kid %q key %q exp %v", v.KeyID, v.Key.KeyID, v.Expiry)
	}
}

func TestParseJWKSErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"not JSON", `nope`, "not a JWKS: "},
		{"no keys", `{"keys":[]}`, "JWKS has no keys"},
		{"symmetric", `{"keys":[{"kty":"oct","kid":"s","k":"c2VjcmV0"}]}`, `JWKS key #0 (kid "s"): unsupported key type []uint8, must be RSA or ECDSA`},
		{"encryption key", strings.Replace(readTestdata(t, "jwks-p256.json"), `"use":"sig"`, `"use":"enc"`, 1),
			`JWKS key #0 (kid "` + kidP256 + `"): use "enc", want "sig"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tokens.ParseJWKS([]byte(tc.doc))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %s", err, tc.want)
			}
		})
	}
}

func TestLoadPublicKeys(t *testing.T) {
	rsaK, ecK := keys(t)
	dir := t.TempDir()
	both := filepath.Join(dir, "both.pem")
	if err := os.WriteFile(both, []byte(readTestdata(t, "rsa2048.pub")+readTestdata(t, "p256.pem")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		want []crypto.PublicKey
	}{
		{filepath.Join("testdata", "rsa2048.pub"), []crypto.PublicKey{rsaK.Public()}},
		{filepath.Join("testdata", "rsa2048.pem"), []crypto.PublicKey{rsaK.Public()}},
		{filepath.Join("testdata", "rsa2048-pkcs8.pem"), []crypto.PublicKey{rsaK.Public()}},
		{filepath.Join("testdata", "p256.pem"), []crypto.PublicKey{ecK.Public()}}, // EC PARAMETERS skipped
		{filepath.Join("testdata", "p256-pkcs8.pem"), []crypto.PublicKey{ecK.Public()}},
		{both, []crypto.PublicKey{rsaK.Public(), ecK.Public()}},
	} {
		got, err := tokens.LoadPublicKeys(tc.file)
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d keys, want %d", tc.file, len(got), len(tc.want))
			continue
		}
		for i := range got {
			if !got[i].(interface{ Equal(crypto.PublicKey) bool }).Equal(tc.want[i]) {
				t.Errorf("%s: key #%d differs", tc.file, i)
			}
		}
	}

	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello\n"), 0o644)
	params := filepath.Join(dir, "params.pem")
	os.WriteFile(params, []byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"), 0o644)
	ed := filepath.Join("testdata", "ed25519-pkcs8.pem")
	missing := filepath.Join(dir, "missing.pem")
	for file, want := range map[string]string{
		notPEM:  notPEM + ": no PEM block",
		params:  params + `: no public or private key PEM block (found "EC PARAMETERS")`,
		ed:      ed + `: "PRIVATE KEY" block: unsupported key type ed25519.PublicKey, must be RSA or ECDSA`,
		missing: "open " + missing + ": no such file or directory",
	} {
		_, err := tokens.LoadPublicKeys(file)
		if err == nil || err.Error() != want {
			t.Errorf("error\n got %v\nwant %s", err, want)
		}
	}
	if _, err := tokens.LoadPublicKeys(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
