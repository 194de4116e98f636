package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

const tokensMintLong = `Issue the service-account token the API server gives the kubelet for a
CSIDriver tokenRequests entry: bound to a pod (and its node), with the
claims of the release (--kubelet-version, --feature-gates: the same release
as run's), signed with the given key. It prints the token, or the
TokenRequest status with -o json.`

const tokensMintExample = `  csi-kubelet-sim tokens mint --service-account-key-file sa.key --pod web-0 --pod-uid 1b4e28ba-2fa1-4d2b-883f-0016d3cca427 --audience vault
  csi-kubelet-sim tokens mint --service-account-key-file sa.key --pod web-0 --pod-uid 1b4e28ba-2fa1-4d2b-883f-0016d3cca427 --kubelet-version 1.31
  csi-kubelet-sim tokens mint --service-account-key-file sa.key --pod web-0 --pod-uid 1b4e28ba-2fa1-4d2b-883f-0016d3cca427 --now 2020-01-01T00:00:00Z  # an expired token`

func newTokensMintCommand(s streams) *cobra.Command {
	return newCommandFor(addTokensMintFlags, newTokensMintOptions(s), &cobra.Command{
		Use:     "mint --service-account-key-file FILE --pod NAME --pod-uid UID [--audience AUD]... [flags]",
		Short:   "Issue a pod-bound service-account token as the API server does",
		Long:    tokensMintLong,
		Example: tokensMintExample,
	})
}

type tokensMintOptions struct {
	streams
	KeyFile           string
	Issuer            string
	APIAudiences      []string
	Namespace         string
	ServiceAccount    string
	ServiceAccountUID string
	Pod               string
	PodUID            string
	Node              string
	NodeUID           string
	Audiences         []string
	Expiration        optionalInt64
	Now               timeFlag
	outputFlag
	releaseFlags
}

func newTokensMintOptions(s streams) *tokensMintOptions {
	return &tokensMintOptions{streams: s, Issuer: tokens.DefaultIssuer, Namespace: "default", ServiceAccount: "default"}
}

func (o *tokensMintOptions) complete(args []string) error { return noArgsError("tokens mint", args) }

func (o *tokensMintOptions) validate() error {
	switch {
	case o.KeyFile == "":
		return withCode(exitUsage, errors.New("tokens mint: --service-account-key-file is required"))
	case o.Namespace == "" || o.ServiceAccount == "":
		return withCode(exitUsage, errors.New("tokens mint: --namespace and --service-account may not be empty"))
	case o.Pod == "" || o.PodUID == "":
		return withCode(exitUsage, errors.New("tokens mint: --pod and --pod-uid are required (the kubelet binds every token to its pod)"))
	case o.NodeUID != "" && o.Node == "":
		return withCode(exitUsage, errors.New("tokens mint: --node-uid needs --node"))
	}
	if err := o.validateOutput(); err != nil {
		return err
	}
	// The pod UID run would refuse is refused here too: it is the same
	// pod, and run would make pods/<uid> of it.
	if err := manifests.ValidatePodUID(o.PodUID, field.NewPath("--pod-uid")); err != nil {
		return withCode(exitUsage, err)
	}
	return o.completeRelease()
}

func (o *tokensMintOptions) run(ctx context.Context) error {
	key, err := tokens.LoadKey(o.KeyFile)
	if err != nil {
		return withCode(exitUsage, fileError("--service-account-key-file", err))
	}
	cfg := o.release.IssuerConfig()
	cfg.Issuer = o.Issuer
	cfg.APIAudiences = o.APIAudiences
	cfg.Key = key
	cfg.Warn = warnTo(o.streams)
	if !o.Now.t.IsZero() {
		now := o.Now.t
		cfg.Now = func() time.Time { return now }
	}
	if o.ServiceAccountUID != "" {
		cfg.ServiceAccountUID = func(string, string) (types.UID, bool) { return types.UID(o.ServiceAccountUID), true }
	}
	cfg.PodNode = func(string, string) (string, types.UID, bool) { return o.Node, types.UID(o.NodeUID), o.Node != "" }
	issuer, err := tokens.NewIssuer(cfg)
	if err != nil {
		return withCode(exitUsage, err)
	}
	// The request the kubelet makes for a CSIDriver tokenRequests entry
	// (docs/kubelet.md §4.1).
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         append([]string{}, o.Audiences...),
		ExpirationSeconds: o.Expiration.v,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: o.Pod, UID: types.UID(o.PodUID)},
	}}
	tr, err := issuer.Token(ctx, o.Namespace, o.ServiceAccount, req)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("TokenRequest: %w", err))
	}
	if o.Output == "json" {
		b, err := json.Marshal(tr.Status)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.Out, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintln(o.Out, tr.Status.Token)
	return err
}
