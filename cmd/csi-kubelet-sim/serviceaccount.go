package main

import (
	"context"
	"crypto"
	"fmt"
	"sync"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// serviceAccountOptions are the API server's service-account flags, for
// the tokens the kubelet requests for CSIDriver tokenRequests.
type serviceAccountOptions struct {
	Issuer       string
	APIAudiences []string
	KeyFile      string

	key crypto.Signer
}

func (o *serviceAccountOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Issuer, "issuer", tokens.DefaultIssuer, "the API server's --service-account-issuer (the tokens' iss)")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", nil, "the API server's --api-audiences, given to tokenRequests with an empty audience (default: the issuer)")
	fs.StringVar(&o.KeyFile, "service-account-key-file", "", "PEM private key that signs tokens, as kube-apiserver takes it (default: a key generated for the run)")
}

func (o *serviceAccountOptions) complete() error {
	if o.KeyFile == "" {
		return nil
	}
	key, err := tokens.LoadKey(o.KeyFile)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--service-account-key-file: %w", err))
	}
	o.key = key
	return nil
}

// tokenSource is the kubelet's token manager in front of the API server's
// TokenRequest; the issuer (and its key, when generated) is made only when
// a CSIDriver first asks for a token.
type tokenSource struct {
	once    sync.Once
	build   func() (*tokens.Manager, *tokens.Issuer, error)
	manager *tokens.Manager
	issuer  *tokens.Issuer
	err     error
}

// Issuer builds the token path now, if not yet, and returns the issuer.
func (t *tokenSource) Issuer() (*tokens.Issuer, error) {
	t.once.Do(func() { t.manager, t.issuer, t.err = t.build() })
	return t.issuer, t.err
}

// Token answers the kubelet's TokenRequest.
func (t *tokenSource) Token(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	t.once.Do(func() { t.manager, t.issuer, t.err = t.build() })
	if t.err != nil {
		return nil, t.err
	}
	return t.manager.Token(ctx, namespace, sa, req)
}

// newTokenSource builds the token path from the flags and the cluster's
// objects: ServiceAccount UIDs and the pods' nodes fill the claims.
func (o *serviceAccountOptions) newTokenSource(c *cluster.Cluster, gates *node.FeatureGates, warn func(string)) *tokenSource {
	return &tokenSource{build: func() (*tokens.Manager, *tokens.Issuer, error) {
		cfg := tokens.DefaultIssuerConfig()
		cfg.JTI = gates.Enabled(node.ServiceAccountTokenJTI)
		cfg.PodNodeInfo = gates.Enabled(node.ServiceAccountTokenPodNodeInfo)
		cfg.Issuer = o.Issuer
		cfg.APIAudiences = o.APIAudiences
		cfg.Key = o.key
		cfg.Warn = warn
		cfg.ServiceAccountUID = func(ns, name string) (types.UID, bool) {
			sa, ok := c.ServiceAccount(ns, name)
			if !ok {
				return "", false
			}
			return sa.UID, true
		}
		cfg.PodNode = func(ns, podName string) (string, types.UID, bool) {
			for _, p := range c.Pods() {
				if p.Namespace == ns && p.Name == podName && p.Spec.NodeName != "" {
					if n, ok := c.Node(p.Spec.NodeName); ok {
						return p.Spec.NodeName, n.UID, true
					}
					return p.Spec.NodeName, "", true
				}
			}
			return "", "", false
		}
		issuer, err := tokens.NewIssuer(cfg)
		if err != nil {
			return nil, nil, err
		}
		return tokens.NewManager(issuer, tokens.WithLogf(nil)), issuer, nil
	}}
}

// serveOIDC serves the issuer's discovery document and keys on addr (the
// API server's /.well-known/openid-configuration and /openid/v1/jwks) until
// ctx ends, so a driver can verify the tokens it gets as it would in a
// cluster. It returns the base URL and a wait for the server to stop.
func serveOIDC(ctx context.Context, addr string, ts *tokenSource) (string, func() error, error) {
	if err := tokens.CheckLoopbackAddr(addr); err != nil {
		return "", nil, withCode(exitUsage, fmt.Errorf("--serve-oidc: %w", err))
	}
	issuer, err := ts.Issuer()
	if err != nil {
		return "", nil, withCode(exitUsage, fmt.Errorf("service account issuer: %w", err))
	}
	h, err := tokens.NewOIDCHandler(issuer.IssuerURL(), "", issuer.PublicKey())
	if err != nil {
		return "", nil, withCode(exitUsage, fmt.Errorf("--serve-oidc: %w", err))
	}
	base, wait, err := tokens.ServeOIDC(ctx, addr, h)
	if err != nil {
		return "", nil, withCode(exitEnvironment, fmt.Errorf("--serve-oidc %s: %w", addr, err))
	}
	return base, wait, nil
}
