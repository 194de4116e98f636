package tokens_test

import (
	"context"
	"crypto"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

func benchIssue(b *testing.B, key crypto.Signer) {
	cfg := baseConfig(key, time.Now)
	cfg.NewUID = nil
	iss := newIssuer(b, cfg)
	req := podRequest("vault", nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Token(ctx, "default", "default", req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// benchVerify measures an independent verifier (go-jose v4: parse, check
// the signature, decode the claims) on one of our tokens.
func benchVerify(b *testing.B, key crypto.Signer, alg jose.SignatureAlgorithm) {
	iss := newIssuer(b, baseConfig(key, time.Now))
	tok := issue(b, iss, podRequest("vault", nil)).Status.Token
	pub := key.Public()
	algs := []jose.SignatureAlgorithm{alg}
	b.ReportAllocs()
	for b.Loop() {
		parsed, err := josejwt.ParseSigned(tok, algs)
		if err != nil {
			b.Fatal(err)
		}
		var c josejwt.Claims
		if err := parsed.Claims(pub, &c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkIssueRSA2048(b *testing.B) { k, _ := keys(b); benchIssue(b, k) }
func BenchmarkIssueP256(b *testing.B)    { _, k := keys(b); benchIssue(b, k) }

func BenchmarkVerifyRSA2048(b *testing.B) { k, _ := keys(b); benchVerify(b, k, jose.RS256) }
func BenchmarkVerifyP256(b *testing.B)    { _, k := keys(b); benchVerify(b, k, jose.ES256) }
