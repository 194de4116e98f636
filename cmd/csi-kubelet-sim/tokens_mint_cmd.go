package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
	return newCommandFor(newTokensMintOptions(s), &cobra.Command{
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

func (o *tokensMintOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.KeyFile, "service-account-key-file", o.KeyFile, "PEM private key `FILE` that signs the token (RSA, or ECDSA P-256/384/521)")
	fs.StringVar(&o.Issuer, "issuer", o.Issuer, "the API server's --service-account-issuer `URL` (the token's iss)")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences, "the API server's --api-audiences, the audiences of a request without any (default: the issuer)")
	fs.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "the pod's namespace")
	fs.StringVar(&o.ServiceAccount, "service-account", o.ServiceAccount, "the pod's serviceAccountName")
	fs.StringVar(&o.ServiceAccountUID, "service-account-uid", o.ServiceAccountUID, "the ServiceAccount's UID (default: derived from namespace and name, as run does)")
	fs.StringVar(&o.Pod, "pod", o.Pod, "the pod the token is bound to")
	fs.StringVar(&o.PodUID, "pod-uid", o.PodUID, "that pod's UID")
	fs.StringVar(&o.Node, "node", o.Node, "the pod's spec.nodeName (kubernetes.io.node claim; none when empty)")
	fs.StringVar(&o.NodeUID, "node-uid", o.NodeUID, "the Node's UID (empty: the claim carries the name only, as when the Node object is missing)")
	fs.StringArrayVar(&o.Audiences, "audience", o.Audiences, "an audience `AUD` of the request (repeatable; none: the API audiences, as a CSIDriver tokenRequest with audience \"\")")
	fs.Var(&o.Expiration, "expiration-seconds", "spec.expirationSeconds: `N` seconds (default: unset, which the API server makes 3600)")
	o.addOutputFlag(fs, "text (the token) or json (the TokenRequest status)")
	o.addReleaseFlags(fs, "the release whose API server issues the token (its claims), %s, as run's", "feature gates over the release's defaults, A=true,B=false (ServiceAccountTokenJTI, ServiceAccountTokenPodNodeInfo, ...), as run's")
	fs.Var(&o.Now, "now", "the API server's clock: a `TIME`, RFC 3339 (default: the current time); a time in the past makes an expired token")
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
