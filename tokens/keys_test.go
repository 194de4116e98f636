package tokens_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLoadKey(t *testing.T) {
	rsaK, ecK := keys(t)
	for file, want := range map[string]any{
		"rsa2048.pem":       rsaK, // PKCS#1
		"rsa2048-pkcs8.pem": rsaK,
		"p256.pem":          ecK, // EC PARAMETERS block first, then SEC1
		"p256-pkcs8.pem":    ecK,
	} {
		got, err := tokens.LoadKey(filepath.Join("testdata", file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if !got.(interface{ Equal(crypto.PrivateKey) bool }).Equal(want) {
			t.Errorf("%s: a different key", file)
		}
	}
}

func TestLoadKeyErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	missing := filepath.Join(dir, "missing.key")
	_, err := tokens.LoadKey(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	// A directory cannot be read as a file (root can read any 0000 file).
	if _, err := tokens.LoadKey(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("directory: %v", err)
	}

	notPEM := write("not.pem", "this is not PEM\n")
	if _, err := tokens.LoadKey(notPEM); err == nil || err.Error() != notPEM+": no PEM block" {
		t.Errorf("non-PEM: %v", err)
	}
	empty := write("empty.pem", "")
	if _, err := tokens.LoadKey(empty); err == nil || err.Error() != empty+": no PEM block" {
		t.Errorf("empty: %v", err)
	}

	pub := filepath.Join("testdata", "rsa2048.pub")
	want := pub + `: no private key PEM block (found "PUBLIC KEY"; want "RSA PRIVATE KEY", "EC PRIVATE KEY" or "PRIVATE KEY")`
	if _, err := tokens.LoadKey(pub); err == nil || err.Error() != want {
		t.Errorf("public key PEM: %v\nwant %s", err, want)
	}
	cert := write("cert.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	if _, err := tokens.LoadKey(cert); err == nil || !strings.HasPrefix(err.Error(), cert+`: no private key PEM block (found "CERTIFICATE"`) {
		t.Errorf("certificate PEM: %v", err)
	}

	ed := filepath.Join("testdata", "ed25519-pkcs8.pem")
	if _, err := tokens.LoadKey(ed); err == nil || err.Error() != ed+": unsupported key type ed25519.PrivateKey" {
		t.Errorf("ed25519: %v", err)
	}

	garbage := write("garbage.pem", "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")
	if _, err := tokens.LoadKey(garbage); err == nil || !strings.HasPrefix(err.Error(), garbage+`: parsing "RSA PRIVATE KEY" block: `) {
		t.Errorf("garbage: %v", err)
	}

	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(p224)
	p224File := write("p224.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})))
	if _, err := tokens.LoadKey(p224File); err == nil || err.Error() != p224File+": unknown private key curve P-224, must be 256, 384, or 521" {
		t.Errorf("P-224: %v", err)
	}
}

func TestWriteKeyPair(t *testing.T) {
	dir := t.TempDir()
	for _, kind := range []string{"rsa", "p256", "p384"} {
		key, err := tokens.GenerateKey(kind)
		if err != nil {
			t.Fatal(err)
		}
		priv, pub := filepath.Join(dir, kind+".key"), filepath.Join(dir, kind+".pub")
		// Pre-existing files with loose modes are replaced, not reused.
		os.WriteFile(priv, []byte("old"), 0o666)
		if err := tokens.WriteKeyPair(priv, pub, key); err != nil {
			t.Fatal(err)
		}
		for p, mode := range map[string]os.FileMode{priv: 0o600, pub: 0o644} {
			st, err := os.Stat(p)
			if err != nil || st.Mode().Perm() != mode {
				t.Errorf("%s: mode %v, want %v (%v)", p, st.Mode().Perm(), mode, err)
			}
		}
		loaded, err := tokens.LoadKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		if !loaded.(interface{ Equal(crypto.PrivateKey) bool }).Equal(key) {
			t.Errorf("%s: round trip gave another key", kind)
		}
		b, _ := pem.Decode([]byte(readFile(t, priv)))
		wantType := map[string]string{"rsa": "RSA PRIVATE KEY", "p256": "EC PRIVATE KEY", "p384": "EC PRIVATE KEY"}[kind]
		if b == nil || b.Type != wantType {
			t.Errorf("%s: private PEM type %v", kind, b)
		}
		pb, _ := pem.Decode([]byte(readFile(t, pub)))
		if pb == nil || pb.Type != "PUBLIC KEY" {
			t.Fatalf("%s: public PEM %v", kind, pb)
		}
		pk, err := x509.ParsePKIXPublicKey(pb.Bytes)
		if err != nil || !key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(pk) {
			t.Errorf("%s: public key %v", kind, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	// No public path: only the private key.
	key, _ := tokens.GenerateKey("ecdsa")
	if err := tokens.WriteKeyPair(filepath.Join(dir, "only.key"), "", key); err != nil {
		t.Error(err)
	}
	if err := tokens.WriteKeyPair(filepath.Join(dir, "nodir", "x.key"), "", key); err == nil {
		t.Error("write into a missing directory succeeded")
	}
	if err := tokens.WriteKeyPair(filepath.Join(dir, "n.key"), "", nil); err == nil {
		t.Error("nil key accepted")
	}
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	if err := tokens.WriteKeyPair(filepath.Join(dir, "small.key"), "", rsa1024); err != nil {
		t.Errorf("any RSA key can be written: %v", err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
