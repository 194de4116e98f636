package main

import (
	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens/tokencmd"
)

const tokensJWKSLong = `Print the JSON Web Key Set of the given keys as the API server publishes it
at /openid/v1/jwks, with the same kid, for a driver that verifies tokens
offline.`

func newTokensJWKSCommand(s session.Streams) *cobra.Command {
	return newCommandFor(addTokensJWKSFlags, tokencmd.NewTokensJWKSOptions(s), &cobra.Command{
		Use:     "jwks --key FILE...",
		Short:   "Print the keys' JWKS as the API server publishes it",
		Long:    tokensJWKSLong,
		Example: `  csi-kubelet-sim tokens jwks --key sa.pub > jwks.json`,
	})
}

const tokensServeLong = `Serve the issuer's OIDC discovery document and its JWKS on a loopback
address, as the API server serves /.well-known/openid-configuration and
/openid/v1/jwks, until interrupted. It prints the base URL on stdout.`

func newTokensServeCommand(s session.Streams) *cobra.Command {
	return newCommandFor(addTokensServeFlags, tokencmd.NewTokensServeOptions(s), &cobra.Command{
		Use:     "serve --service-account-key-file FILE... [--issuer URL] [--addr 127.0.0.1:0]",
		Short:   "Serve OIDC discovery and the JWKS for a driver to verify tokens against",
		Long:    tokensServeLong,
		Example: `  csi-kubelet-sim tokens serve --service-account-key-file sa.pub --issuer https://kubernetes.default.svc --addr 127.0.0.1:8443`,
	})
}
