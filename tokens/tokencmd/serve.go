package tokencmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

type TokensJWKSOptions struct {
	session.Streams
	KeyFiles []string
}

func NewTokensJWKSOptions(s session.Streams) *TokensJWKSOptions {
	return &TokensJWKSOptions{Streams: s}
}

func (o *TokensJWKSOptions) Complete(args []string) error {
	return session.NoArgsError("tokens jwks", args)
}

func (o *TokensJWKSOptions) Validate() error {
	if len(o.KeyFiles) == 0 {
		return session.WithCode(session.ExitUsage, errors.New("tokens jwks: --key is required"))
	}
	return nil
}

func (o *TokensJWKSOptions) Run(context.Context) error {
	keys, err := loadPublicKeys("--key", o.KeyFiles)
	if err != nil {
		return err
	}
	b, err := tokens.JWKS(keys...)
	if err != nil {
		return session.WithCode(session.ExitUsage, fmt.Errorf("--key: %w", err))
	}
	_, err = fmt.Fprintf(o.Out, "%s\n", b)
	return err
}

type TokensServeOptions struct {
	session.Streams
	KeyFiles         []string
	Issuer           string
	JWKSURI          string
	Addr             string
	AllowNonLoopback bool
}

func NewTokensServeOptions(s session.Streams) *TokensServeOptions {
	return &TokensServeOptions{Streams: s, Issuer: tokens.DefaultIssuer, Addr: "127.0.0.1:0"}
}

func (o *TokensServeOptions) Complete(args []string) error {
	return session.NoArgsError("tokens serve", args)
}

func (o *TokensServeOptions) Validate() error {
	if len(o.KeyFiles) == 0 {
		return session.WithCode(session.ExitUsage, errors.New("tokens serve: --service-account-key-file is required"))
	}
	if !o.AllowNonLoopback {
		if err := tokens.CheckLoopbackAddr(o.Addr); err != nil {
			return session.WithCode(session.ExitUsage, fmt.Errorf("--addr: %w (--allow-non-loopback to serve on it anyway)", err))
		}
	}
	return nil
}

func (o *TokensServeOptions) Run(ctx context.Context) error {
	keys, err := loadPublicKeys("--service-account-key-file", o.KeyFiles)
	if err != nil {
		return err
	}
	h, err := tokens.NewOIDCHandler(o.Issuer, o.JWKSURI, keys...)
	if err != nil {
		return session.WithCode(session.ExitUsage, err)
	}
	if strings.HasPrefix(o.Issuer, "http:") {
		session.WarnTo(o.Streams)("the API server serves discovery only for an https issuer")
	}
	base, wait, err := tokens.ServeOIDC(ctx, o.Addr, h)
	if err != nil {
		return session.WithCode(session.ExitEnvironment, fmt.Errorf("--addr: %w", err))
	}
	fmt.Fprintln(o.Out, base)
	fmt.Fprintf(o.Err, "serving %s%s and %s%s for issuer %s until interrupted\n", base, tokens.OpenIDConfigPath, base, tokens.JWKSPath, o.Issuer)
	if err := wait(); err != nil {
		return session.WithCode(session.ExitEnvironment, fmt.Errorf("serve: %w", err))
	}
	return nil
}
