package admission

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/client-go/rest"
)

// exchange is one HTTP request to a webhook.
type exchange struct {
	URL      string
	Latency  time.Duration
	Status   int
	Err      error
	Response []byte
}

// call is what the plugin did for one webhook invocation, gathered from
// the audit annotations, warnings and HTTP requests it makes. The plugin
// calls webhooks one after another and writes the mutation annotation
// last (a deferred call in callAttrMutatingHook), so everything recorded
// since the previous mutation annotation belongs to this call.
type call struct {
	Round, Index     int
	Webhook          string
	Configuration    string
	Mutated          bool
	FailedOpen       bool
	Patch            json.RawMessage
	Exchanges        []exchange
	Warnings         []string
	AuditAnnotations map[string]string
}

type recorder struct {
	mu      sync.Mutex
	pending call
	calls   []call
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = call{}
	r.calls = nil
}

func (r *recorder) snapshot() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// AddWarning records a warning a webhook returned (warning.Recorder).
func (r *recorder) AddWarning(_, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending.Warnings = append(r.pending.Warnings, text)
}

func (r *recorder) exchange(e exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending.Exchanges = append(r.pending.Exchanges, e)
}

// annotation files one audit annotation the plugin adds.
func (r *recorder) annotation(key, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case strings.HasPrefix(key, mutating.MutationAuditAnnotationFailedOpenKeyPrefix):
		if n := len(r.calls); n > 0 {
			r.calls[n-1].FailedOpen = true
		}
	case strings.HasPrefix(key, mutating.PatchAuditAnnotationPrefix):
		var p mutating.PatchAuditAnnotation
		if json.Unmarshal([]byte(value), &p) == nil {
			r.pending.Patch, _ = json.Marshal(p.Patch)
		}
	case strings.HasPrefix(key, mutating.MutationAuditAnnotationPrefix):
		var m mutating.MutationAuditAnnotation
		_ = json.Unmarshal([]byte(value), &m)
		c := r.pending
		c.Round, c.Index = roundIndex(strings.TrimPrefix(key, mutating.MutationAuditAnnotationPrefix))
		c.Webhook, c.Configuration, c.Mutated = m.Webhook, m.Configuration, m.Mutated
		r.calls = append(r.calls, c)
		r.pending = call{}
	default:
		if r.pending.AuditAnnotations == nil {
			r.pending.AuditAnnotations = map[string]string{}
		}
		r.pending.AuditAnnotations[key] = value
	}
}

// roundIndex parses "round_R_index_I".
func roundIndex(s string) (round, index int) {
	parts := strings.Split(s, "_")
	if len(parts) == 4 {
		round, _ = strconv.Atoi(parts[1])
		index, _ = strconv.Atoi(parts[3])
	}
	return round, index
}

// annotatedAttributes passes the plugin's audit annotations to the
// recorder; the API server would put them in the audit log.
type annotatedAttributes struct {
	admission.Attributes
	rec *recorder
}

func (a *annotatedAttributes) AddAnnotation(key, value string) error {
	a.rec.annotation(key, value)
	return a.Attributes.AddAnnotation(key, value)
}

func (a *annotatedAttributes) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	a.rec.annotation(key, value)
	return a.Attributes.AddAnnotationWithLevel(key, value, level)
}

// authInfo gives the webhook clients no credentials (the API server sends
// none unless its admission config names a kubeconfig) and a transport
// that records each request.
type authInfo struct{ rec *recorder }

func (a *authInfo) config() *rest.Config {
	return &rest.Config{WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		return &recordingTransport{next: rt, rec: a.rec}
	}}
}

func (a *authInfo) ClientConfigFor(string) (*rest.Config, error) { return a.config(), nil }

func (a *authInfo) ClientConfigForService(string, string, int) (*rest.Config, error) {
	return a.config(), nil
}

type recordingTransport struct {
	next http.RoundTripper
	rec  *recorder
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	e := exchange{URL: req.URL.String(), Err: err}
	if err == nil {
		body, rerr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		e.Status, e.Response = resp.StatusCode, body
		if rerr != nil {
			e.Err = rerr
		}
	}
	e.Latency = time.Since(start)
	t.rec.exchange(e)
	return resp, err
}
