// Package remote is the admission step as the simulator's commands see it:
// the report and error types, the kinds admission handles, and a client of
// the helper process (csi-kubelet-sim-admission) that runs the API
// server's webhook plugin. The plugin (k8s.io/apiserver, and with it
// client-go's scheme of every API type) costs about 11 ms of package
// initialisation at every start; in a helper of its own, only the runs
// whose input holds MutatingWebhookConfigurations pay it.
package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// UserInfo is the user the API server puts in the AdmissionReview.
type UserInfo struct {
	Name   string
	UID    string
	Groups []string
}

// DefaultUser is the user of a kubeadm cluster's admin.conf, which is what
// `kubectl apply` runs as on most test clusters.
var DefaultUser = UserInfo{Name: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins", "system:authenticated"}}

// Report is what admission did to one object.
type Report struct {
	Kind      string          `json:"objectKind"`
	Namespace string          `json:"namespace,omitempty"`
	Name      string          `json:"name"`
	Webhooks  []WebhookReport `json:"webhooks"`
	// Changes is every change the webhooks made to the object.
	Changes []string `json:"changes,omitempty"`
}

// WebhookReport is one webhook in one round.
type WebhookReport struct {
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	// Round is 0, or 1 when the webhook is reinvoked
	// (reinvocationPolicy IfNeeded after a later webhook changed the object).
	Round   int    `json:"round"`
	Called  bool   `json:"called"`
	Skipped string `json:"skipped,omitempty"` // why it was not called
	// Latency of the HTTP call(s).
	Latency time.Duration `json:"latencyNs,omitempty"`
	URL     string        `json:"url,omitempty"`
	Allowed bool          `json:"allowed,omitempty"`
	// Error is why the call failed (refused, unreachable, bad answer).
	Error            string            `json:"error,omitempty"`
	FailedOpen       bool              `json:"failedOpen,omitempty"` // failurePolicy Ignore let the request on
	Mutated          bool              `json:"mutated,omitempty"`
	Patch            json.RawMessage   `json:"patch,omitempty"`
	Changes          []string          `json:"changes,omitempty"`
	Warnings         []string          `json:"warnings,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
}

// ErrorKind sorts admission failures.
type ErrorKind string

const (
	// Denied: a webhook answered allowed: false.
	Denied ErrorKind = "denied"
	// CallFailed: a webhook with failurePolicy Fail could not be called or
	// gave an answer the API server rejects.
	CallFailed ErrorKind = "call failed"
	// PatchFailed: a webhook's patch does not apply to the object.
	PatchFailed ErrorKind = "patch failed"
	// Failed: anything else the API server refuses the object for.
	Failed ErrorKind = "failed"
)

// Error is the API server refusing the object in admission.
type Error struct {
	Kind          ErrorKind
	Webhook       string
	Configuration string
	Code          int32  // the HTTP status code the API server answers
	Message       string // the API server's message
}

func (e *Error) Error() string {
	if e.Webhook == "" {
		return fmt.Sprintf("admission %s: %s", e.Kind, e.Message)
	}
	return fmt.Sprintf("admission webhook %q %s: %s", e.Webhook, e.Kind, e.Message)
}

// ParseService parses "ns/name[:port]=host:port".
func ParseService(s string) (key, addr string, err error) {
	key, addr, ok := strings.Cut(s, "=")
	if !ok || addr == "" {
		return "", "", fmt.Errorf("%q: want namespace/name[:port]=host:port", s)
	}
	ns, name, ok := strings.Cut(key, "/")
	if !ok || ns == "" || name == "" {
		return "", "", fmt.Errorf("%q: want namespace/name[:port]=host:port", s)
	}
	if _, _, err := splitHostPort(addr); err != nil {
		return "", "", fmt.Errorf("%q: %w", s, err)
	}
	return key, addr, nil
}

// splitHostPort splits "host:port", the port in 1..65535.
func splitHostPort(addr string) (string, int, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", 0, errors.New("address without a port")
	}
	p, err := strconv.Atoi(addr[i+1:])
	if err != nil || p <= 0 || p > 65535 {
		return "", 0, fmt.Errorf("bad port %q", addr[i+1:])
	}
	return addr[:i], p, nil
}
