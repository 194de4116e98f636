package tokencmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

type TokensKeygenOptions struct {
	session.Streams
	Type       string
	PrivateKey string
	PublicKey  string
	Force      bool
}

func NewTokensKeygenOptions(s session.Streams) *TokensKeygenOptions {
	return &TokensKeygenOptions{Streams: s, Type: "rsa"}
}

func (o *TokensKeygenOptions) Complete(args []string) error {
	return session.NoArgsError("tokens keygen", args)
}

func (o *TokensKeygenOptions) Validate() error {
	if o.PrivateKey == "" {
		return session.WithCode(session.ExitUsage, errors.New("tokens keygen: --private-key is required"))
	}
	if o.PublicKey != "" && filepath.Clean(o.PublicKey) == filepath.Clean(o.PrivateKey) {
		return session.WithCode(session.ExitUsage, errors.New("tokens keygen: --public-key and --private-key are the same file"))
	}
	for _, f := range []struct{ flag, path string }{{"--private-key", o.PrivateKey}, {"--public-key", o.PublicKey}} {
		if f.path == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Dir(f.path)); err != nil || !fi.IsDir() {
			return session.WithCode(session.ExitUsage, fmt.Errorf("%s %s: no such directory %s", f.flag, f.path, filepath.Dir(f.path)))
		}
		if _, err := os.Lstat(f.path); err == nil && !o.Force {
			return session.WithCode(session.ExitUsage, fmt.Errorf("%s %s: file exists (--force replaces it)", f.flag, f.path))
		}
	}
	return nil
}

func (o *TokensKeygenOptions) Run(context.Context) error {
	key, err := tokens.GenerateKey(o.Type)
	if err != nil {
		return session.WithCode(session.ExitUsage, fmt.Errorf("--type: %w", err))
	}
	kid, err := tokens.KeyID(key)
	if err != nil {
		return err
	}
	if err := tokens.WriteKeyPair(o.PrivateKey, o.PublicKey, key); err != nil {
		return session.WithCode(session.ExitEnvironment, fmt.Errorf("writing the key pair: %w", err))
	}
	fmt.Fprintln(o.Out, kid)
	return nil
}
