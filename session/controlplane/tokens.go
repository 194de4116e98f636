package controlplane

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// kubeletTokenRequests is the API server's TokenRequest API as the
// kubelet's token manager calls it with --apiserver: each request it makes
// (a token it has not cached, or one due for refresh) and the API
// server's answer are lines of the trace, as the driver's own API requests
// are. The trace is given once the session exists (traceTo); requests
// before that are not printed.
type kubeletTokenRequests struct {
	api tokens.TokenGetter

	mu    sync.Mutex
	trace *csiclient.Trace
}

// traceTo prints the requests into the session's trace from now on.
func (k *kubeletTokenRequests) traceTo(t *csiclient.Trace) {
	k.mu.Lock()
	k.trace = t
	k.mu.Unlock()
}

func (k *kubeletTokenRequests) Token(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	k.mu.Lock()
	trace := k.trace
	k.mu.Unlock()
	if trace == nil {
		return k.api.Token(ctx, namespace, sa, req)
	}
	l := csiclient.LabelsFrom(ctx)
	lctx := csiclient.WithLabels(ctx, csiclient.Labels{Component: "kubelet", Operation: "TokenRequest", Volume: l.Volume, Pod: l.Pod})
	trace.Note(lctx, false, tokenRequestText(namespace, sa, req))
	resp, err := k.api.Token(ctx, namespace, sa, req)
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
