package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certLifetime is how long the run's certificates are valid: a run that
// holds its pod longer than a day is not what this mode is for, and a
// stolen file is worth nothing after.
const certLifetime = 24 * time.Hour

// authority is the CA made for one run: it signs the API server's serving
// certificate and the clients' certificates, and nothing outside the run
// trusts it.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	tmpl := baseTemplate(pkix.Name{CommonName: "csi-kubelet-sim run CA"})
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	return &authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func baseTemplate(subject pkix.Name) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certLifetime),
	}
}

// keyPair is a certificate and its key, PEM-encoded.
type keyPair struct{ cert, key []byte }

// serving issues the API server's certificate, for loopback only.
func (a *authority) serving() (keyPair, error) {
	tmpl := baseTemplate(pkix.Name{CommonName: "kube-apiserver"})
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	return a.issue(tmpl)
}

// client issues a client certificate: the API server reads the user from
// the common name and the groups from the organisations.
func (a *authority) client(user string, groups ...string) (keyPair, error) {
	tmpl := baseTemplate(pkix.Name{CommonName: user, Organization: groups})
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return a.issue(tmpl)
}

func (a *authority) issue(tmpl *x509.Certificate) (keyPair, error) {
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("key for %s: %w", tmpl.Subject.CommonName, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("certificate for %s: %w", tmpl.Subject.CommonName, err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, fmt.Errorf("key for %s: %w", tmpl.Subject.CommonName, err)
	}
	return keyPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
	}, nil
}

// write puts the pair in dir as name.crt and name.key (0600: keys).
func (p keyPair) write(dir, name string) (certPath, keyPath string, err error) {
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, p.cert, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, p.key, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}
