package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

const tokensKeygenLong = `Generate a service-account signing key pair, as kube-apiserver takes it: the
private key for --service-account-signing-key-file (and for run's and mint's
--service-account-key-file), the public key for --service-account-key-file.
It prints the key's kid, the one the API server writes into tokens.`

func newTokensKeygenCommand(s streams) *cobra.Command {
	return newCommandFor(addTokensKeygenFlags, newTokensKeygenOptions(s), &cobra.Command{
		Use:   "keygen --private-key FILE [--public-key FILE] [--type rsa|ecdsa|p256|p384|p521]",
		Short: "Generate a service-account signing key pair and print its kid",
		Long:  tokensKeygenLong,
		Example: `  csi-kubelet-sim tokens keygen --private-key sa.key --public-key sa.pub
  csi-kubelet-sim tokens keygen --type p256 --private-key sa-ec.key`,
	})
}

type tokensKeygenOptions struct {
	streams
	Type       string
	PrivateKey string
	PublicKey  string
	Force      bool
}

func newTokensKeygenOptions(s streams) *tokensKeygenOptions {
	return &tokensKeygenOptions{streams: s, Type: "rsa"}
}

func (o *tokensKeygenOptions) complete(args []string) error {
	return noArgsError("tokens keygen", args)
}

func (o *tokensKeygenOptions) validate() error {
	if o.PrivateKey == "" {
		return withCode(exitUsage, errors.New("tokens keygen: --private-key is required"))
	}
	if o.PublicKey != "" && filepath.Clean(o.PublicKey) == filepath.Clean(o.PrivateKey) {
		return withCode(exitUsage, errors.New("tokens keygen: --public-key and --private-key are the same file"))
	}
	for _, f := range []struct{ flag, path string }{{"--private-key", o.PrivateKey}, {"--public-key", o.PublicKey}} {
		if f.path == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Dir(f.path)); err != nil || !fi.IsDir() {
			return withCode(exitUsage, fmt.Errorf("%s %s: no such directory %s", f.flag, f.path, filepath.Dir(f.path)))
		}
		if _, err := os.Lstat(f.path); err == nil && !o.Force {
			return withCode(exitUsage, fmt.Errorf("%s %s: file exists (--force replaces it)", f.flag, f.path))
		}
	}
	return nil
}

func (o *tokensKeygenOptions) run(context.Context) error {
	key, err := tokens.GenerateKey(o.Type)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--type: %w", err))
	}
	kid, err := tokens.KeyID(key)
	if err != nil {
		return err
	}
	if err := tokens.WriteKeyPair(o.PrivateKey, o.PublicKey, key); err != nil {
		return withCode(exitEnvironment, fmt.Errorf("writing the key pair: %w", err))
	}
	fmt.Fprintln(o.Out, kid)
	return nil
}
