package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// client is a small JSON client of the API server. client-go's would do,
// but it would link its clientset, scheme and serializers into
// csi-kubelet-sim (twice the binary, more start-up for every run, with or
// without --apiserver); the few requests here need only net/http.
type client struct {
	base     string
	hc       *http.Client
	warnings *Warnings
	token    string // a bearer token (a kubeconfig's), when set
}

// Credential is a client certificate and key, as files.
type Credential struct{ Cert, Key string }

func newClient(base, caFile string, cred Credential, warnings *Warnings) (*client, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s: no certificate", caFile)
	}
	pair, err := tls.LoadX509KeyPair(cred.Cert, cred.Key)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}
	return &client{base: base, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}, warnings: warnings}, nil
}

// StatusError is the API server's refusal: its Status object.
type StatusError struct {
	Code   int
	Status metav1.Status
}

func (e *StatusError) Error() string {
	if e.Status.Message != "" {
		return e.Status.Message
	}
	return fmt.Sprintf("HTTP %d", e.Code)
}

// statusCode is the HTTP code of an API error, 0 for other errors.
func statusCode(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

func isNotFound(err error) bool      { return statusCode(err) == http.StatusNotFound }
func isAlreadyExists(err error) bool { return statusCode(err) == http.StatusConflict }

// do sends in (JSON; nil: no body) and decodes the answer into out (nil:
// discarded). contentType defaults to JSON.
func (c *client) do(ctx context.Context, method, path string, in, out any, contentType ...string) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "csi-kubelet-sim")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if in != nil {
		ct := "application/json"
		if len(contentType) > 0 {
			ct = contentType[0]
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	c.warnings.fromHeaders(resp.Header.Values("Warning"))
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &StatusError{Code: resp.StatusCode}
		_ = json.Unmarshal(data, &se.Status)
		return se
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// Warnings collects the API server's warnings to the simulator's requests
// (the Warning headers), for the trace.
type Warnings struct {
	mu   sync.Mutex
	seen map[string]bool
	list []string
}

// fromHeaders keeps each warning once; a header is `299 - "text"`.
func (w *Warnings) fromHeaders(hs []string) {
	if w == nil {
		return
	}
	for _, h := range hs {
		code, rest, ok := strings.Cut(h, " ")
		if !ok || code != "299" {
			continue
		}
		_, text, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		if s, err := strconv.Unquote(text); err == nil {
			text = s
		}
		w.add(text)
	}
}

func (w *Warnings) add(text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	if !w.seen[text] {
		w.seen[text] = true
		w.list = append(w.list, text)
	}
}

// Take returns the warnings not taken yet.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}
