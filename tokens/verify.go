package tokens

// Verification is what a relying party (or the API server's service-account
// authenticator, AuthenticateToken in pkg/serviceaccount/jwt.go) does with a
// token. It uses go-jose v4 and none of the signing code of this package
// (sign.go, keys.go), so that a token this package signs is checked by an
// independent implementation; even the kid is recomputed here.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

// DefaultLeeway is the clock skew allowed on exp, nbf and iat: go-jose's
// jwt.DefaultLeeway, which the API server's validator uses (Validate in
// pkg/serviceaccount/claims.go).
const DefaultLeeway = josejwt.DefaultLeeway

// The reasons a token whose signature verifies is still refused, worded as
// the API server's validator words them (pkg/serviceaccount/claims.go and
// jwt.go). Verify wraps them with the values compared.
var (
	ErrTokenExpired        = errors.New("service account token has expired")
	ErrTokenNotValidYet    = errors.New("service account token is not valid yet")
	ErrTokenIssuedInFuture = errors.New("service account token is issued in the future")
	ErrTokenIssuer         = errors.New("token issuer is invalid")
	ErrTokenAudience       = errors.New("token audiences are invalid for the target audiences")
	// ErrTokenSignature covers every failure to match the token to a key:
	// an unknown kid, a disallowed alg, a signature that does not verify.
	ErrTokenSignature = errors.New("invalid signature")
)

// signatureAlgorithms are the algs the API server signs with
// (JWTTokenGenerator): anything else, "none" and HMAC included, is refused
// before any key is tried.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.ES384, jose.ES512}

// VerificationKey is one public key a token may be signed with.
type VerificationKey struct {
	// KeyID is the kid: the API server's keyIDFromPublicKey for keys read
	// from PEM files, the "kid" member for JWKS entries.
	KeyID string
	// Algorithm is the "alg" member of a JWKS entry; when set, a token
	// with another alg is not checked against this key. Empty for keys
	// read from PEM files (the key type decides).
	Algorithm string
	// Key is an *rsa.PublicKey or an *ecdsa.PublicKey.
	Key crypto.PublicKey
}

// VerifyOptions says what a token must satisfy.
type VerifyOptions struct {
	// Keys are the candidates. When the token has a kid, only keys with
	// that kid are tried, as the API server does; otherwise all of them.
	Keys []VerificationKey
	// Audiences, when not empty: the token's aud must contain at least one
	// of them (the API server intersects the two lists).
	Audiences []string
	// Issuer, when set, must equal the iss claim.
	Issuer string
	// Now is the time exp, nbf and iat are checked against. Default
	// time.Now.
	Now func() time.Time
	// Leeway is the clock skew allowed on exp, nbf and iat. 0 means
	// DefaultLeeway; a negative value means none.
	Leeway time.Duration
}

// VerifiedToken is a token whose signature and claims passed Verify.
type VerifiedToken struct {
	// Header and Claims are the decoded JOSE header and payload, as sent.
	Header json.RawMessage
	Claims json.RawMessage
	// Algorithm and KeyID are the header's alg and kid; Key is the key the
	// signature verified with.
	Algorithm string
	KeyID     string
	Key       VerificationKey

	Issuer    string
	Subject   string
	Audience  []string
	ID        string
	Expiry    time.Time // zero when the token has no exp
	NotBefore time.Time // zero when absent
	IssuedAt  time.Time // zero when absent
	// Kubernetes is the private "kubernetes.io" claim (zero when absent).
	Kubernetes KubernetesClaims
}

// WarnAfter is the kubernetes.io.warnafter claim of an extended token, or
// the zero time.
func (v *VerifiedToken) WarnAfter() time.Time {
	if v.Kubernetes.WarnAfter == nil {
		return time.Time{}
	}
	return time.Unix(*v.Kubernetes.WarnAfter, 0)
}

// Verify checks a compact JWS token as the API server's service-account
// authenticator does: alg one of RS256/ES256/ES384/ES512, the key chosen by
// kid, the signature (go-jose), then iss, aud and the times (exp, nbf, iat,
// with the leeway). The error names the first check that failed and wraps
// one of the Err* values above.
func Verify(token string, opts VerifyOptions) (*VerifiedToken, error) {
	token = strings.TrimSpace(token)
	if len(opts.Keys) == 0 {
		return nil, errors.New("no verification keys")
	}
	if strings.Count(token, ".") != 2 {
		return nil, fmt.Errorf("not a compact JWS: %d segments, want 3", strings.Count(token, ".")+1)
	}
	jws, err := jose.ParseSignedCompact(token, signatureAlgorithms)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTokenSignature, err)
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: %d signatures, want 1", ErrTokenSignature, len(jws.Signatures))
	}
	hdr := jws.Signatures[0].Protected
	rawHeader, err := base64.RawURLEncoding.DecodeString(token[:strings.IndexByte(token, '.')])
	if err != nil { // go-jose decoded it already
		return nil, fmt.Errorf("header: %w", err)
	}

	out := &VerifiedToken{Header: rawHeader, Algorithm: hdr.Algorithm, KeyID: hdr.KeyID}
	out.Claims, out.Key, err = verifySignature(jws, hdr, opts.Keys)
	if err != nil {
		return nil, err
	}

	var std josejwt.Claims
	var priv struct {
		Kubernetes *KubernetesClaims `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(out.Claims, &std); err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	if err := json.Unmarshal(out.Claims, &priv); err != nil {
		return nil, fmt.Errorf("claims: kubernetes.io: %w", err)
	}
	out.Issuer, out.Subject, out.ID = std.Issuer, std.Subject, std.ID
	out.Audience = []string(std.Audience)
	out.Expiry, out.NotBefore, out.IssuedAt = numericTime(std.Expiry), numericTime(std.NotBefore), numericTime(std.IssuedAt)
	if priv.Kubernetes != nil {
		out.Kubernetes = *priv.Kubernetes
	}

	if opts.Issuer != "" && std.Issuer != opts.Issuer {
		return nil, fmt.Errorf("%w: iss %q, want %q", ErrTokenIssuer, std.Issuer, opts.Issuer)
	}
	if len(opts.Audiences) != 0 && !slices.ContainsFunc(opts.Audiences, std.Audience.Contains) {
		return nil, fmt.Errorf("%w: aud %q, want one of %q", ErrTokenAudience, out.Audience, opts.Audiences)
	}

	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	leeway := opts.Leeway
	switch {
	case leeway == 0:
		leeway = DefaultLeeway
	case leeway < 0:
		leeway = 0
	}
	switch err := std.ValidateWithLeeway(josejwt.Expected{Time: now}, leeway); {
	case err == nil:
	case errors.Is(err, josejwt.ErrExpired):
		return nil, fmt.Errorf("%w: exp %s, now %s (leeway %s)", ErrTokenExpired, stamp(out.Expiry), stamp(now), leeway)
	case errors.Is(err, josejwt.ErrNotValidYet):
		return nil, fmt.Errorf("%w: nbf %s, now %s (leeway %s)", ErrTokenNotValidYet, stamp(out.NotBefore), stamp(now), leeway)
	case errors.Is(err, josejwt.ErrIssuedInTheFuture):
		return nil, fmt.Errorf("%w: iat %s, now %s (leeway %s)", ErrTokenIssuedInFuture, stamp(out.IssuedAt), stamp(now), leeway)
	default:
		return nil, fmt.Errorf("claims: %w", err)
	}
	return out, nil
}

// verifySignature picks the candidate keys by kid (all of them when the
// token has none; StaticPublicKeysGetter.GetPublicKeys) and returns the
// payload verified by the first that matches.
func verifySignature(jws *jose.JSONWebSignature, hdr jose.Header, keys []VerificationKey) (json.RawMessage, VerificationKey, error) {
	var candidates []VerificationKey
	for _, k := range keys {
		if hdr.KeyID == "" || k.KeyID == hdr.KeyID {
			candidates = append(candidates, k)
		}
	}
	if len(candidates) == 0 {
		kids := make([]string, len(keys))
		for i, k := range keys {
			kids[i] = k.KeyID
		}
		return nil, VerificationKey{}, fmt.Errorf("%w: no key with kid %q (have %q)", ErrTokenSignature, hdr.KeyID, kids)
	}
	var errs []string
	for _, k := range candidates {
		if k.Algorithm != "" && k.Algorithm != hdr.Algorithm {
			errs = append(errs, fmt.Sprintf("key %q is for %s, token is %s", k.KeyID, k.Algorithm, hdr.Algorithm))
			continue
		}
		payload, err := jws.Verify(k.Key)
		if err != nil {
			errs = append(errs, fmt.Sprintf("key %q: %v", k.KeyID, err))
			continue
		}
		return payload, k, nil
	}
	return nil, VerificationKey{}, fmt.Errorf("%w: %s", ErrTokenSignature, strings.Join(errs, "; "))
}

func numericTime(d *josejwt.NumericDate) time.Time {
	if d == nil {
		return time.Time{}
	}
	return d.Time().UTC()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "(none)"
	}
	return t.UTC().Format(time.RFC3339)
}

// PublicVerificationKeys makes verification keys of public (or private)
// keys, with the kid the API server gives them: base64url of the SHA-256 of
// the PKIX DER encoding.
func PublicVerificationKeys(keys ...crypto.PublicKey) ([]VerificationKey, error) {
	out := make([]VerificationKey, 0, len(keys))
	for i, k := range keys {
		pub, err := checkPublic(k)
		if err != nil {
			return nil, fmt.Errorf("key #%d: %w", i, err)
		}
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return nil, fmt.Errorf("key #%d: %w", i, err)
		}
		sum := sha256.Sum256(der)
		out = append(out, VerificationKey{KeyID: base64.RawURLEncoding.EncodeToString(sum[:]), Key: pub})
	}
	return out, nil
}

// ParseJWKS reads a JSON Web Key Set (such as the API server's
// /openid/v1/jwks) with go-jose. Entries must be RSA or EC public keys
// whose "use", when given, is "sig".
func ParseJWKS(data []byte) ([]VerificationKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("JWKS has no keys")
	}
	out := make([]VerificationKey, 0, len(set.Keys))
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			return nil, fmt.Errorf("JWKS key #%d (kid %q): use %q, want \"sig\"", i, k.KeyID, k.Use)
		}
		pub, err := checkPublic(k.Key)
		if err != nil {
			return nil, fmt.Errorf("JWKS key #%d (kid %q): %w", i, k.KeyID, err)
		}
		out = append(out, VerificationKey{KeyID: k.KeyID, Algorithm: k.Algorithm, Key: pub})
	}
	return out, nil
}

// checkPublic returns the public half of an RSA or ECDSA (P-256, P-384,
// P-521) key, the only kinds the API server signs with.
func checkPublic(key any) (crypto.PublicKey, error) {
	if s, ok := key.(crypto.Signer); ok {
		key = s.Public()
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		return k, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return k, nil
		}
		return nil, fmt.Errorf("unsupported curve %s, must be P-256, P-384 or P-521", k.Curve.Params().Name)
	}
	return nil, fmt.Errorf("unsupported key type %T, must be RSA or ECDSA", key)
}

// LoadPublicKeys reads every key of a PEM file, as the API server reads
// --service-account-key-file: "PUBLIC KEY" (PKIX), "RSA PUBLIC KEY"
// (PKCS#1), "CERTIFICATE" (its subject key) and the private key blocks
// LoadKey takes (their public halves). Other blocks are skipped; a file
// with no key is an error. Errors name the file and never hold key bytes.
func LoadPublicKeys(path string) ([]crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *fs.PathError names the file
	}
	var (
		keys []crypto.PublicKey
		seen []string
	)
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		var key any
		switch block.Type {
		case "PUBLIC KEY":
			key, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			key, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				key = cert.PublicKey
			}
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		default:
			seen = append(seen, block.Type)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: parsing %q block: %w", path, block.Type, err)
		}
		pub, err := checkPublic(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %q block: %w", path, block.Type, err)
		}
		keys = append(keys, pub)
	}
	switch {
	case len(keys) != 0:
		return keys, nil
	case len(seen) == 0:
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	return nil, fmt.Errorf("%s: no public or private key PEM block (found %s)", path, quoteAll(seen))
}
