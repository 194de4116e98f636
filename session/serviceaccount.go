package session

import (
	"context"
	"crypto"
	"fmt"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// serviceAccountOptions are the API server's service-account flags, for
// the tokens the kubelet requests for CSIDriver tokenRequests.
type ServiceAccountOptions struct {
	Issuer       string
	APIAudiences []string
	KeyFile      string

	key crypto.Signer
	api tokens.TokenGetter // --apiserver: the API server's TokenRequest API
}

func (o *ServiceAccountOptions) Complete() error {
	if o.KeyFile == "" {
		return nil
	}
	key, err := tokens.LoadKey(o.KeyFile)
	if err != nil {
		return WithCode(ExitUsage, fmt.Errorf("--service-account-key-file: %w", err))
	}
	o.key = key
	return nil
}

// newTokenSource is the one token path of a command: the API server's
// issuer for the release behind the kubelet's token cache.
func (o *ServiceAccountOptions) newTokenSource(c *manifests.Cluster, r node.Release, nodeName string, warn func(string)) *node.TokenSource {
	return node.NewTokenSource(r, c, node.TokenOptions{Issuer: o.Issuer, APIAudiences: o.APIAudiences, Key: o.key, NodeName: nodeName, Warn: warn, API: o.api})
}

// serveOIDC serves the issuer's discovery document and keys on addr (the
// API server's /.well-known/openid-configuration and /openid/v1/jwks) until
// ctx ends, so a driver can verify the tokens it gets as it would in a
// cluster. It returns the base URL and a wait for the server to stop.
func serveOIDC(ctx context.Context, addr string, ts *node.TokenSource) (string, func() error, error) {
	if err := tokens.CheckLoopbackAddr(addr); err != nil {
		return "", nil, WithCode(ExitUsage, fmt.Errorf("--serve-oidc: %w", err))
	}
	issuer, err := ts.Issuer()
	if err != nil {
		return "", nil, WithCode(ExitUsage, fmt.Errorf("service account issuer: %w", err))
	}
	h, err := tokens.NewOIDCHandler(issuer.IssuerURL(), "", issuer.PublicKey())
	if err != nil {
		return "", nil, WithCode(ExitUsage, fmt.Errorf("--serve-oidc: %w", err))
	}
	base, wait, err := tokens.ServeOIDC(ctx, addr, h)
	if err != nil {
		return "", nil, WithCode(ExitEnvironment, fmt.Errorf("--serve-oidc %s: %w", addr, err))
	}
	return base, wait, nil
}
