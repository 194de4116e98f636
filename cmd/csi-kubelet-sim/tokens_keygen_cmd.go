package main

import (
	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens/tokencmd"
)

const tokensKeygenLong = `Generate a service-account signing key pair, as kube-apiserver takes it: the
private key for --service-account-signing-key-file (and for run's and mint's
--service-account-key-file), the public key for --service-account-key-file.
It prints the key's kid, the one the API server writes into tokens.`

func newTokensKeygenCommand(s session.Streams) *cobra.Command {
	return newCommandFor(addTokensKeygenFlags, tokencmd.NewTokensKeygenOptions(s), &cobra.Command{
		Use:   "keygen --private-key FILE [--public-key FILE] [--type rsa|ecdsa|p256|p384|p521]",
		Short: "Generate a service-account signing key pair and print its kid",
		Long:  tokensKeygenLong,
		Example: `  csi-kubelet-sim tokens keygen --private-key sa.key --public-key sa.pub
  csi-kubelet-sim tokens keygen --type p256 --private-key sa-ec.key`,
	})
}
