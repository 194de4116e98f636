package main

import (
	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens/tokencmd"
)

const tokensMintLong = `Issue the service-account token the API server gives the kubelet for a
CSIDriver tokenRequests entry: bound to a pod (and its node), with the
claims of the release (--kubelet-version, --feature-gates: the same release
as run's), signed with the given key. It prints the token, or the
TokenRequest status with -o json.`

const tokensMintExample = `  csi-kubelet-sim tokens mint --service-account-key-file sa.key --pod web-0 --pod-uid 1b4e28ba-2fa1-4d2b-883f-0016d3cca427 --audience vault
  csi-kubelet-sim tokens mint --service-account-key-file sa.key --pod web-0 --pod-uid 1b4e28ba-2fa1-4d2b-883f-0016d3cca427 --kubelet-version 1.31
  csi-kubelet-sim tokens mint --service-account-key-file sa.key --pod web-0 --pod-uid 1b4e28ba-2fa1-4d2b-883f-0016d3cca427 --now 2020-01-01T00:00:00Z  # an expired token`

func newTokensMintCommand(s session.Streams) *cobra.Command {
	return newCommandFor(addTokensMintFlags, tokencmd.NewTokensMintOptions(s), &cobra.Command{
		Use:     "mint --service-account-key-file FILE --pod NAME --pod-uid UID [--audience AUD]... [flags]",
		Short:   "Issue a pod-bound service-account token as the API server does",
		Long:    tokensMintLong,
		Example: tokensMintExample,
	})
}
