package tokens

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"

	"github.com/golang-jwt/jwt/v5"
)

// Claims is the payload of a service-account token as the API server writes
// it (Claims in pkg/serviceaccount/claims.go, merged by GenerateToken in
// pkg/serviceaccount/jwt.go). The fields are declared in the order go-jose
// v2 emits them (it re-marshals the merged claims as a map, so keys come out
// sorted), which makes the payload byte-for-byte what a real API server signs.
type Claims struct {
	Audience   []string         `json:"aud,omitempty"` // always an array: go-jose v2 has no single-string form
	Expiry     int64            `json:"exp"`
	IssuedAt   int64            `json:"iat"`
	Issuer     string           `json:"iss,omitempty"`
	ID         string           `json:"jti,omitempty"`
	Kubernetes KubernetesClaims `json:"kubernetes.io"`
	NotBefore  int64            `json:"nbf"`
	Subject    string           `json:"sub"`
}

// KubernetesClaims is the private "kubernetes.io" claim object (keys sorted
// as go-jose v2 writes them).
type KubernetesClaims struct {
	Namespace      string     `json:"namespace,omitempty"`
	Node           *ObjectRef `json:"node,omitempty"`
	Pod            *ObjectRef `json:"pod,omitempty"`
	ServiceAccount ObjectRef  `json:"serviceaccount"`
	WarnAfter      *int64     `json:"warnafter,omitempty"`
}

// ObjectRef is a {name, uid} claim; either is left out when empty.
type ObjectRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// The jwt.Claims interface; only a parser would call these.

func (c *Claims) GetExpirationTime() (*jwt.NumericDate, error) { return numericDate(c.Expiry), nil }
func (c *Claims) GetIssuedAt() (*jwt.NumericDate, error)       { return numericDate(c.IssuedAt), nil }
func (c *Claims) GetNotBefore() (*jwt.NumericDate, error)      { return numericDate(c.NotBefore), nil }
func (c *Claims) GetIssuer() (string, error)                   { return c.Issuer, nil }
func (c *Claims) GetSubject() (string, error)                  { return c.Subject, nil }
func (c *Claims) GetAudience() (jwt.ClaimStrings, error)       { return c.Audience, nil }

func numericDate(sec int64) *jwt.NumericDate {
	if sec == 0 {
		return nil
	}
	return jwt.NewNumericDate(unix(sec))
}

// jwtSigner signs claims the way JWTTokenGenerator does: header {alg, kid}
// and nothing else.
type jwtSigner struct {
	method jwt.SigningMethod
	key    any
	alg    string
	kid    string
}

func newJWTSigner(key crypto.Signer) (*jwtSigner, error) {
	pub := key.Public()
	alg, err := algorithmFor(pub)
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(pub)
	if err != nil {
		return nil, fmt.Errorf("failed to derive keyID: %w", err)
	}
	s := &jwtSigner{alg: alg, kid: kid, key: key}
	switch key.(type) {
	case *rsa.PrivateKey, *ecdsa.PrivateKey:
		s.method = jwt.GetSigningMethod(alg)
	default:
		// An opaque crypto.Signer (HSM, KMS, ...): hash and sign through
		// the interface.
		m := &opaqueMethod{alg: alg}
		switch alg {
		case "RS256", "ES256":
			m.hash = crypto.SHA256
		case "ES384":
			m.hash = crypto.SHA384
		case "ES512":
			m.hash = crypto.SHA512
		}
		if ec, ok := pub.(*ecdsa.PublicKey); ok {
			m.size = (ec.Curve.Params().BitSize + 7) / 8
		}
		s.method = m
	}
	if s.method == nil {
		return nil, fmt.Errorf("no signing method for %s", alg)
	}
	return s, nil
}

func (s *jwtSigner) sign(c *Claims) (string, error) {
	t := jwt.NewWithClaims(s.method, c)
	// The API server's JWS header is exactly {"alg","kid"}: go-jose v2
	// writes no "typ", jwt/v5 does by default.
	delete(t.Header, "typ")
	t.Header["kid"] = s.kid
	return t.SignedString(s.key)
}

// opaqueMethod signs through crypto.Signer: PKCS#1 v1.5 for RSA, and the
// fixed-size r||s JWS form (RFC 7518 3.4) of the signer's ASN.1 output for
// ECDSA.
type opaqueMethod struct {
	alg  string
	hash crypto.Hash
	size int // ECDSA coordinate size in bytes; 0 for RSA
}

func (m *opaqueMethod) Alg() string { return m.alg }

func (m *opaqueMethod) Verify(string, []byte, any) error {
	return errors.New("tokens: opaque signing method cannot verify")
}

func (m *opaqueMethod) Sign(signingString string, key any) ([]byte, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("tokens: key %T is not a crypto.Signer", key)
	}
	h := m.hash.New()
	h.Write([]byte(signingString))
	sig, err := signer.Sign(rand.Reader, h.Sum(nil), m.hash)
	if err != nil || m.size == 0 {
		return sig, err
	}
	var rs struct{ R, S *big.Int }
	if rest, err := asn1.Unmarshal(sig, &rs); err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("tokens: malformed ECDSA signature from %T", key)
	}
	out := make([]byte, 2*m.size)
	rs.R.FillBytes(out[:m.size])
	rs.S.FillBytes(out[m.size:])
	return out, nil
}
