package main

import (
	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens/tokencmd"
)

const tokensVerifyLong = `Check a token as a driver or the API server would: its signature against the
keys (PEM files, a JWKS file or URL), its time claims, and, when given, its
audience and issuer. The token is the argument, the content of the file it
names, or stdin for -. It prints the header and claims as JSON; a token that
fails a check exits 1.`

func newTokensVerifyCommand(s session.Streams) *cobra.Command {
	return newCommandFor(addTokensVerifyFlags, tokencmd.NewTokensVerifyOptions(s), &cobra.Command{
		Use:   "verify (--key FILE... | --jwks FILE | --jwks-url URL) [--audience AUD] [--issuer URL] TOKEN|FILE|-",
		Short: "Verify a token's signature and claims, and print them",
		Long:  tokensVerifyLong,
		Example: `  csi-kubelet-sim tokens verify --key sa.pub --audience vault "$TOKEN"
  csi-kubelet-sim tokens mint ... | csi-kubelet-sim tokens verify --jwks jwks.json -`,
	})
}
