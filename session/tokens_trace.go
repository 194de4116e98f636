package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// tokenKind is the kind of -o json's record of a token the kubelet put in
// a NodePublishVolume (volume_context or secrets,
// csi.storage.k8s.io/serviceAccount.tokens). The call's record shows the
// token as its fingerprint; this record carries what the token says, its
// decoded header and claims, and never the token or its signature: the
// claims are what a driver checks (audience, expiry, the bound pod), and
// without the signature they cannot be replayed. `tokens claims` reads it.
const TokenKind = "token"

// tokenHandedOut is that record.
type TokenHandedOut struct {
	SchemaVersion  int             `json:"schemaVersion"`
	Kind           string          `json:"kind"`
	Time           time.Time       `json:"time"`
	Component      string          `json:"component"`
	Operation      string          `json:"operation"`
	Volume         string          `json:"volume,omitempty"`
	Pod            string          `json:"pod,omitempty"`
	ServiceAccount string          `json:"service_account"`
	Audience       string          `json:"audience"`
	Fingerprint    string          `json:"fingerprint"`
	Expiration     time.Time       `json:"expiration_timestamp"`
	Header         json.RawMessage `json:"header,omitempty"`
	Claims         json.RawMessage `json:"claims,omitempty"`
	// Error: the token could not be decoded (an API server's opaque
	// token), so it has no header and claims here.
	Error string `json:"error,omitempty"`
}

// tokenRecorder is the kubelet's token source as -o json sees it: every
// token the kubelet asks for a volume (from its cache or fresh) is
// written as a tokenHandedOut record before the call that carries it.
type TokenRecorder struct {
	Next node.TokenIssuer
	Out  interface{ Object(any) }
}

func (r TokenRecorder) Token(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	resp, err := r.Next.Token(ctx, namespace, sa, req)
	if err == nil && resp != nil {
		r.Out.Object(handedOut(ctx, namespace, sa, req, resp))
	}
	return resp, err
}

// handedOut is the record of one token.
func handedOut(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest, resp *authenticationv1.TokenRequest) TokenHandedOut {
	l := csiclient.LabelsFrom(ctx)
	rec := TokenHandedOut{SchemaVersion: csiclient.SchemaVersion, Kind: TokenKind, Time: time.Now().UTC(),
		Component: l.Component, Operation: l.Operation, Volume: l.Volume, Pod: l.Pod,
		ServiceAccount: namespace + "/" + sa, Audience: strings.Join(req.Spec.Audiences, ","),
		Fingerprint: csiclient.TokenFingerprint(resp.Status.Token), Expiration: resp.Status.ExpirationTimestamp.UTC()}
	d, err := tokens.Decode(resp.Status.Token)
	if err != nil {
		rec.Error = err.Error()
		return rec
	}
	rec.Header, rec.Claims = d.Header, d.Claims
	return rec
}

// kubeletTokenRequests is the API server's TokenRequest API as the
// kubelet's token manager calls it with --apiserver: each request it makes
// (a token it has not cached, or one due for refresh) and the API
// server's answer are lines of the trace, as the driver's own API requests
// are. The trace is given once the session exists (traceTo); requests
// before that are not printed.
type KubeletTokenRequests struct {
	Api tokens.TokenGetter

	mu    sync.Mutex
	trace *csiclient.Trace
}

// traceTo prints the requests into the session's trace from now on.
func (k *KubeletTokenRequests) TraceTo(t *csiclient.Trace) {
	k.mu.Lock()
	k.trace = t
	k.mu.Unlock()
}

func (k *KubeletTokenRequests) Token(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	k.mu.Lock()
	trace := k.trace
	k.mu.Unlock()
	if trace == nil {
		return k.Api.Token(ctx, namespace, sa, req)
	}
	l := csiclient.LabelsFrom(ctx)
	lctx := csiclient.WithLabels(ctx, csiclient.Labels{Component: "kubelet", Operation: "TokenRequest", Volume: l.Volume, Pod: l.Pod})
	trace.Note(lctx, false, tokenRequestText(namespace, sa, req))
	resp, err := k.Api.Token(ctx, namespace, sa, req)
	if err != nil {
		trace.Warn(lctx, "API server: TokenRequest failed: "+err.Error())
		return resp, err
	}
	trace.Note(lctx, false, tokenAnswerText(resp))
	return resp, nil
}

// tokenRequestText is the kubelet's TokenRequest as the API receives it.
func tokenRequestText(namespace, sa string, req *authenticationv1.TokenRequest) string {
	auds := "[] (the API server's audiences)"
	if len(req.Spec.Audiences) > 0 {
		auds = "[" + strings.Join(req.Spec.Audiences, ", ") + "]"
	}
	exp := "unset (the API server's default)"
	if e := req.Spec.ExpirationSeconds; e != nil {
		exp = fmt.Sprint(*e)
	}
	bound := "nothing"
	if ref := req.Spec.BoundObjectRef; ref != nil {
		bound = fmt.Sprintf("%s %s/%s (uid %s)", ref.Kind, namespace, ref.Name, ref.UID)
	}
	return fmt.Sprintf("POST /api/v1/namespaces/%s/serviceaccounts/%s/token: audiences %s, expirationSeconds %s, bound to %s", namespace, sa, auds, exp, bound)
}

// tokenAnswerText is the API server's answer: the expiry, the token as
// its fingerprint, and what it was bound to (the node comes from the API
// server, read from the token's claims).
func tokenAnswerText(resp *authenticationv1.TokenRequest) string {
	exp := resp.Status.ExpirationTimestamp.UTC()
	text := fmt.Sprintf("API server: 201 Created, expirationTimestamp %s, token %s", exp.Format(time.RFC3339), csiclient.TokenFingerprint(resp.Status.Token))
	d, err := tokens.Decode(resp.Status.Token)
	if err != nil {
		return text + " (not a JWT: " + err.Error() + ")"
	}
	if !d.IssuedAt.IsZero() {
		text += fmt.Sprintf(" (valid %s)", exp.Sub(d.IssuedAt).Round(time.Second))
	}
	text += ", sub " + d.Subject
	if p := d.Kubernetes.Pod; p != nil {
		text += ", pod " + d.Kubernetes.Namespace + "/" + p.Name
	}
	if n := d.Kubernetes.Node; n != nil {
		text += ", node " + n.Name
		if n.UID != "" {
			text += " (uid " + n.UID + ")"
		}
	}
	return text
}
