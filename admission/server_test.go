package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// testCA is a CA and a serving certificate it signed, for 127.0.0.1 and
// the service names the tests use.
type testCA struct {
	caPEM []byte
	cert  tls.Certificate
}

func newTestCA(t *testing.T, dnsNames ...string) *testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test webhook CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: dnsNames, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		cert:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
}

// handlerFunc answers one AdmissionReview request.
type handlerFunc func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// serve starts an HTTPS webhook server whose paths are answered by the
// handlers; it records the requests it gets.
func (ca *testCA) serve(t *testing.T, handlers map[string]handlerFunc) (*httptest.Server, *[]*admissionv1.AdmissionRequest) {
	t.Helper()
	var got []*admissionv1.AdmissionRequest
	mux := http.NewServeMux()
	for path, h := range handlers {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			var review admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			got = append(got, review.Request)
			resp := h(review.Request)
			if resp == nil {
				return
			}
			resp.UID = review.Request.UID
			review.Request = nil
			review.Response = resp
			_ = json.NewEncoder(w).Encode(&review)
		})
	}
	mux.HandleFunc("/malformed", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{not json")) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &got
}

func patch(p string) handlerFunc {
	return func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(p), PatchType: &pt}
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
