package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

const tokensLong = `Service-account tokens as the kube-apiserver issues, publishes and checks
them: the keys (keygen), a pod-bound token for a CSIDriver tokenRequests entry
(mint), the JWKS (jwks), the OIDC discovery endpoints (serve), a token's
signature and claims (verify), and the claims of the tokens a run handed the
driver, from its -o json output (claims). run uses the same issuer for the
tokens it hands the driver.`

const tokensExample = `  csi-kubelet-sim tokens keygen --private-key sa.key --public-key sa.pub
  csi-kubelet-sim tokens mint --service-account-key-file sa.key --pod web-0 --pod-uid 1b4e28ba-2fa1-4d2b-883f-0016d3cca427 --audience vault \
    | csi-kubelet-sim tokens verify --key sa.pub --audience vault -`

// newTokensCommand is the `tokens` group; it runs nothing itself.
func newTokensCommand(s session.Streams) *cobra.Command {
	c := &cobra.Command{
		Use:     "tokens keygen|mint|jwks|serve|verify|claims",
		Short:   "Service-account tokens as the API server issues, publishes and checks them",
		Long:    tokensLong,
		Example: tokensExample,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] != "help" {
				return session.WithCode(session.ExitUsage, fmt.Errorf("tokens: unknown command %q; 'csi-kubelet-sim tokens --help' lists them", args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return c.Help()
			}
			fmt.Fprint(s.Err, c.UsageString())
			return session.WithCode(session.ExitUsage, errors.New("tokens: a command is needed"))
		},
	}
	c.AddCommand(
		newTokensKeygenCommand(s),
		newTokensMintCommand(s),
		newTokensJWKSCommand(s),
		newTokensServeCommand(s),
		newTokensVerifyCommand(s),
		newTokensClaimsCommand(s),
	)
	return c
}
