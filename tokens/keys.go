package tokens

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
)

// PEM block types LoadKey accepts and WriteKeyPair writes.
const (
	pemRSAPrivate   = "RSA PRIVATE KEY" // PKCS#1
	pemECPrivate    = "EC PRIVATE KEY"  // SEC1
	pemPKCS8Private = "PRIVATE KEY"     // PKCS#8
	pemPublic       = "PUBLIC KEY"      // PKIX
)

// LoadKey reads a PEM private key file as the API server reads
// --service-account-signing-key-file: the first PKCS#1 ("RSA PRIVATE KEY"),
// SEC1 ("EC PRIVATE KEY") or PKCS#8 ("PRIVATE KEY") block is used, other
// blocks (such as the "EC PARAMETERS" block openssl writes first) are skipped.
// The key must be RSA or ECDSA on P-256, P-384 or P-521.
func LoadKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *fs.PathError names the file
	}
	return parseKeyPEM(path, data)
}

func parseKeyPEM(path string, data []byte) (crypto.Signer, error) {
	var seen []string
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		var (
			key any
			err error
		)
		switch block.Type {
		case pemRSAPrivate:
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case pemECPrivate:
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case pemPKCS8Private:
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		default:
			seen = append(seen, block.Type)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: parsing %q block: %w", path, block.Type, err)
		}
		switch k := key.(type) {
		case *rsa.PrivateKey:
			return k, nil
		case *ecdsa.PrivateKey:
			if _, err := algorithmFor(&k.PublicKey); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return k, nil
		}
		return nil, fmt.Errorf("%s: unsupported key type %T", path, key)
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	return nil, fmt.Errorf("%s: no private key PEM block (found %s; want %q, %q or %q)",
		path, quoteAll(seen), pemRSAPrivate, pemECPrivate, pemPKCS8Private)
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// GenerateKey makes a new signing key. kind is, case-insensitively, "rsa"
// or "rsa2048" (RSA-2048), "rsa3072", "rsa4096", "ecdsa", "ec", "p256" or
// "es256" (ECDSA P-256), "p384" or "es384", "p521" or "es512".
func GenerateKey(kind string) (crypto.Signer, error) {
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "rsa", "rsa2048", "rs256":
		return rsa.GenerateKey(rand.Reader, 2048)
	case "rsa3072":
		return rsa.GenerateKey(rand.Reader, 3072)
	case "rsa4096":
		return rsa.GenerateKey(rand.Reader, 4096)
	case "ecdsa", "ec", "p256", "p-256", "es256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "p384", "p-384", "es384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "p521", "p-521", "es512":
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	}
	return nil, fmt.Errorf("unknown key kind %q (want rsa, rsa3072, rsa4096, ecdsa/p256, p384 or p521)", kind)
}

// WriteKeyPair writes key as PEM to privPath (mode 0600; PKCS#1 "RSA PRIVATE
// KEY" for RSA, SEC1 "EC PRIVATE KEY" for ECDSA, as kubeadm's sa.key) and its
// public half as PKIX "PUBLIC KEY" to pubPath (mode 0644), which the API
// server takes as --service-account-key-file. An empty pubPath writes no
// public key. Each file is replaced atomically.
func WriteKeyPair(privPath, pubPath string, key crypto.Signer) error {
	if key == nil {
		return errors.New("WriteKeyPair: nil key")
	}
	var block *pem.Block
	switch k := key.(type) {
	case *rsa.PrivateKey:
		block = &pem.Block{Type: pemRSAPrivate, Bytes: x509.MarshalPKCS1PrivateKey(k)}
	case *ecdsa.PrivateKey:
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return fmt.Errorf("%s: %w", privPath, err)
		}
		block = &pem.Block{Type: pemECPrivate, Bytes: der}
	default:
		return fmt.Errorf("%s: unsupported key type %T", privPath, key)
	}
	if err := writeFileAtomic(privPath, pem.EncodeToMemory(block), 0o600); err != nil {
		return err
	}
	if pubPath == "" {
		return nil
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("%s: %w", pubPath, err)
	}
	return writeFileAtomic(pubPath, pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: der}), 0o644)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// KeyID is the API server's keyIDFromPublicKey: base64url (unpadded) of the
// SHA-256 of the PKIX DER encoding of the public key. A private key
// (crypto.Signer) is accepted and its public half used.
func KeyID(pub crypto.PublicKey) (string, error) {
	if s, ok := pub.(crypto.Signer); ok {
		pub = s.Public()
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("failed to serialize public key to DER format: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Algorithm returns the JWS algorithm the API server signs with for a key
// (private or public): RS256 for RSA, ES256/ES384/ES512 for ECDSA on
// P-256/P-384/P-521.
func Algorithm(key crypto.PublicKey) (string, error) {
	if s, ok := key.(crypto.Signer); ok {
		key = s.Public()
	}
	return algorithmFor(key)
}

func algorithmFor(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return "RS256", nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", nil
		case elliptic.P384():
			return "ES384", nil
		case elliptic.P521():
			return "ES512", nil
		}
		return "", fmt.Errorf("unknown private key curve %s, must be 256, 384, or 521", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("unsupported key type %T, must be RSA or ECDSA", pub)
}

// JWKS returns the JSON Web Key Set the API server serves at
// /openid/v1/jwks for these keys, built as the API server builds it: a
// go-jose JSONWebKey per key with use "sig", the key ID and the algorithm
// (publicJWKsFromKeys in pkg/serviceaccount/openidmetadata.go). Private
// keys are accepted and their public halves published.
func JWKS(keys ...crypto.PublicKey) ([]byte, error) {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for i, key := range keys {
		if s, ok := key.(crypto.Signer); ok {
			key = s.Public()
		}
		alg, err := algorithmFor(key)
		if err != nil {
			return nil, fmt.Errorf("error constructing JWK for key #%d: %w", i, err)
		}
		kid, err := KeyID(key)
		if err != nil {
			return nil, fmt.Errorf("error constructing JWK for key #%d: %w", i, err)
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: alg, Use: "sig"})
	}
	return json.Marshal(set)
}
