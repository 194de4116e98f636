package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

const tokensJWKSLong = `Print the JSON Web Key Set of the given keys as the API server publishes it
at /openid/v1/jwks, with the same kid, for a driver that verifies tokens
offline.`

func newTokensJWKSCommand(s streams) *cobra.Command {
	return newCommandFor(addTokensJWKSFlags, newTokensJWKSOptions(s), &cobra.Command{
		Use:     "jwks --key FILE...",
		Short:   "Print the keys' JWKS as the API server publishes it",
		Long:    tokensJWKSLong,
		Example: `  csi-kubelet-sim tokens jwks --key sa.pub > jwks.json`,
	})
}

const tokensServeLong = `Serve the issuer's OIDC discovery document and its JWKS on a loopback
address, as the API server serves /.well-known/openid-configuration and
/openid/v1/jwks, until interrupted. It prints the base URL on stdout.`

func newTokensServeCommand(s streams) *cobra.Command {
	return newCommandFor(addTokensServeFlags, newTokensServeOptions(s), &cobra.Command{
		Use:     "serve --service-account-key-file FILE... [--issuer URL] [--addr 127.0.0.1:0]",
		Short:   "Serve OIDC discovery and the JWKS for a driver to verify tokens against",
		Long:    tokensServeLong,
		Example: `  csi-kubelet-sim tokens serve --service-account-key-file sa.pub --issuer https://kubernetes.default.svc --addr 127.0.0.1:8443`,
	})
}

type tokensJWKSOptions struct {
	streams
	KeyFiles []string
}

func newTokensJWKSOptions(s streams) *tokensJWKSOptions { return &tokensJWKSOptions{streams: s} }

func (o *tokensJWKSOptions) complete(args []string) error { return noArgsError("tokens jwks", args) }

func (o *tokensJWKSOptions) validate() error {
	if len(o.KeyFiles) == 0 {
		return withCode(exitUsage, errors.New("tokens jwks: --key is required"))
	}
	return nil
}

func (o *tokensJWKSOptions) run(context.Context) error {
	keys, err := loadPublicKeys("--key", o.KeyFiles)
	if err != nil {
		return err
	}
	b, err := tokens.JWKS(keys...)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--key: %w", err))
	}
	_, err = fmt.Fprintf(o.Out, "%s\n", b)
	return err
}

type tokensServeOptions struct {
	streams
	KeyFiles         []string
	Issuer           string
	JWKSURI          string
	Addr             string
	AllowNonLoopback bool
}

func newTokensServeOptions(s streams) *tokensServeOptions {
	return &tokensServeOptions{streams: s, Issuer: tokens.DefaultIssuer, Addr: "127.0.0.1:0"}
}

func (o *tokensServeOptions) complete(args []string) error { return noArgsError("tokens serve", args) }

func (o *tokensServeOptions) validate() error {
	if len(o.KeyFiles) == 0 {
		return withCode(exitUsage, errors.New("tokens serve: --service-account-key-file is required"))
	}
	if !o.AllowNonLoopback {
		if err := tokens.CheckLoopbackAddr(o.Addr); err != nil {
			return withCode(exitUsage, fmt.Errorf("--addr: %w (--allow-non-loopback to serve on it anyway)", err))
		}
	}
	return nil
}

func (o *tokensServeOptions) run(ctx context.Context) error {
	keys, err := loadPublicKeys("--service-account-key-file", o.KeyFiles)
	if err != nil {
		return err
	}
	h, err := tokens.NewOIDCHandler(o.Issuer, o.JWKSURI, keys...)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if strings.HasPrefix(o.Issuer, "http:") {
		warnTo(o.streams)("the API server serves discovery only for an https issuer")
	}
	base, wait, err := tokens.ServeOIDC(ctx, o.Addr, h)
	if err != nil {
		return withCode(exitEnvironment, fmt.Errorf("--addr: %w", err))
	}
	fmt.Fprintln(o.Out, base)
	fmt.Fprintf(o.Err, "serving %s%s and %s%s for issuer %s until interrupted\n", base, tokens.OpenIDConfigPath, base, tokens.JWKSPath, o.Issuer)
	if err := wait(); err != nil {
		return withCode(exitEnvironment, fmt.Errorf("serve: %w", err))
	}
	return nil
}
