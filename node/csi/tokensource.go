package csi

// tokensource.go follows pkg/kubelet/token/token_manager.go: the kubelet's
// TokenRequests, answered here without an API server.

import (
	"context"
	"crypto"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// TokenOptions are the API server's service-account flags.
type TokenOptions struct {
	Issuer       string        // --service-account-issuer; "" the default
	APIAudiences []string      // --api-audiences
	Key          crypto.Signer // nil: a key generated on first use
	// NodeName is the node of pods that name none (the kubelet's own).
	NodeName string
	// Warn receives the API server's warnings.
	Warn func(string)
	// API, when set, answers the TokenRequests instead of the simulator's
	// own issuer: a real API server's TokenRequest API (--apiserver), with
	// the same issuer and key, so the tokens verify the same.
	API tokens.TokenGetter
}

// TokenSource is the kubelet's token manager in front of the API server's
// TokenRequest endpoint. Every command uses this one source, so the claims
// always follow the release (the JTI and PodNodeInfo gates). The issuer
// and its key are made when a CSIDriver first asks for a token.
type TokenSource struct {
	release release.Release
	cluster *manifests.Cluster
	opts    TokenOptions

	once    sync.Once
	manager *tokens.Manager
	issuer  *tokens.Issuer
	err     error
}

var _ TokenIssuer = (*TokenSource)(nil)

// NewTokenSource returns the token path of a cluster of this release:
// ServiceAccount UIDs and the pods' nodes come from the cluster's objects.
func NewTokenSource(r release.Release, c *manifests.Cluster, o TokenOptions) *TokenSource {
	return &TokenSource{release: r, cluster: c, opts: o}
}

// Issuer builds the token path now, if not yet, and returns the issuer.
func (t *TokenSource) Issuer() (*tokens.Issuer, error) {
	t.once.Do(t.build)
	return t.issuer, t.err
}

// Token answers the kubelet's TokenRequest.
func (t *TokenSource) Token(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	t.once.Do(t.build)
	if t.err != nil {
		return nil, t.err
	}
	return t.manager.Token(ctx, namespace, sa, req)
}

func (t *TokenSource) build() {
	cfg := t.release.IssuerConfig()
	if t.opts.Issuer != "" {
		cfg.Issuer = t.opts.Issuer
	}
	cfg.APIAudiences = t.opts.APIAudiences
	cfg.Key = t.opts.Key
	cfg.Warn = t.opts.Warn
	cfg.ServiceAccountUID = t.serviceAccountUID
	cfg.PodNode = t.podNode
	issuer, err := tokens.NewIssuer(cfg)
	if err != nil {
		t.err = err
		return
	}
	t.issuer = issuer
	var getter tokens.TokenGetter = issuer
	if t.opts.API != nil {
		getter = t.opts.API
	}
	t.manager = tokens.NewManager(getter, tokens.WithLogf(nil))
}

func (t *TokenSource) serviceAccountUID(ns, name string) (types.UID, bool) {
	sa, ok := t.cluster.ServiceAccount(ns, name)
	if !ok {
		return "", false
	}
	return sa.UID, true
}

// podNode is the node the bound pod runs on, with its UID: the
// simulator's own node always has one (NodeUID); another node has the
// Node object's, or none when the input lacks the object (the API server
// then writes the name only).
func (t *TokenSource) podNode(ns, podName string) (string, types.UID, bool) {
	nodeName := t.opts.NodeName
	if p, ok := t.cluster.Pod(ns, podName); ok && p.Spec.NodeName != "" {
		nodeName = p.Spec.NodeName
	}
	switch {
	case nodeName == "":
		return "", "", false
	case nodeName == t.opts.NodeName:
		uid, _ := NodeUID(t.cluster, nodeName)
		return nodeName, uid, true
	}
	if n, ok := t.cluster.Node(nodeName); ok {
		return nodeName, n.UID, true
	}
	return nodeName, "", true
}
