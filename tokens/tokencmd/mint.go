package tokencmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

type TokensMintOptions struct {
	session.Streams
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
	session.OutputFlag
	session.ReleaseFlags
}

func NewTokensMintOptions(s session.Streams) *TokensMintOptions {
	return &TokensMintOptions{Streams: s, Issuer: tokens.DefaultIssuer, Namespace: "default", ServiceAccount: "default"}
}

func (o *TokensMintOptions) Complete(args []string) error {
	return session.NoArgsError("tokens mint", args)
}

func (o *TokensMintOptions) Validate() error {
	switch {
	case o.KeyFile == "":
		return session.WithCode(session.ExitUsage, errors.New("tokens mint: --service-account-key-file is required"))
	case o.Namespace == "" || o.ServiceAccount == "":
		return session.WithCode(session.ExitUsage, errors.New("tokens mint: --namespace and --service-account may not be empty"))
	case o.Pod == "" || o.PodUID == "":
		return session.WithCode(session.ExitUsage, errors.New("tokens mint: --pod and --pod-uid are required (the kubelet binds every token to its pod)"))
	case o.NodeUID != "" && o.Node == "":
		return session.WithCode(session.ExitUsage, errors.New("tokens mint: --node-uid needs --node"))
	}
	if err := o.ValidateOutput(); err != nil {
		return err
	}
	// The pod UID run would refuse is refused here too: it is the same
	// pod, and run would make pods/<uid> of it.
	if err := manifests.ValidatePodUID(o.PodUID, field.NewPath("--pod-uid")); err != nil {
		return session.WithCode(session.ExitUsage, err)
	}
	return o.CompleteRelease()
}

func (o *TokensMintOptions) Run(ctx context.Context) error {
	key, err := tokens.LoadKey(o.KeyFile)
	if err != nil {
		return session.WithCode(session.ExitUsage, fileError("--service-account-key-file", err))
	}
	cfg := o.Release.IssuerConfig()
	cfg.Issuer = o.Issuer
	cfg.APIAudiences = o.APIAudiences
	cfg.Key = key
	cfg.Warn = session.WarnTo(o.Streams)
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
		return session.WithCode(session.ExitUsage, err)
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
		return session.WithCode(session.ExitUsage, fmt.Errorf("TokenRequest: %w", err))
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
