package main

import (
	"github.com/spf13/cobra"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens/tokencmd"
)

const tokensClaimsLong = `Show the tokens a run handed the driver, from the run's JSON output
(run, plan or load with -o json): for each token in a NodePublishVolume
(csi.storage.k8s.io/serviceAccount.tokens), the pod and volume, the audience,
the token's fingerprint (as the trace shows it), its decoded header and its
claims: iss, sub, aud, iat, nbf and exp as times, the kubernetes.io pod, node
and service account. Never the token or its signature: the run's JSON output
carries the decoded claims without --show-secrets (a record of kind "token"),
and a trace made with --show-secrets is decoded too. Exit 2 when the input
holds no token.`

func newTokensClaimsCommand(s session.Streams) *cobra.Command {
	return newCommandFor(addTokensClaimsFlags, &tokencmd.TokensClaimsOptions{Streams: s}, &cobra.Command{
		Use:   "claims FILE|-",
		Short: "Show the claims of the tokens a run handed out, from its -o json output",
		Long:  tokensClaimsLong,
		Example: `  csi-kubelet-sim run -f fixtures/samples/tokens --endpoint /run/csi/csi.sock -o json > run.jsonl
  csi-kubelet-sim tokens claims run.jsonl
  csi-kubelet-sim run ... -o json | csi-kubelet-sim tokens claims -o json -`,
	})
}
