package csi

// tokens.go follows pkg/volume/csi/csi_mounter.go podServiceAccountTokenAttrs.

import (
	"context"
	"encoding/json"
	"errors"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// serviceAccountTokenAttrs is csiMountMgr.podServiceAccountTokenAttrs: one
// TokenRequest per CSIDriver tokenRequests entry, bound to the pod, the
// statuses marshalled as one JSON map keyed by audience; and whether they
// go to secrets (serviceAccountTokenInSecrets) instead of volume_context.
func (k *Plugin) serviceAccountTokenAttrs(ctx context.Context, pod *corev1.Pod, driver string) (map[string]string, bool, error) {
	d, ok := k.Cluster.CSIDriver(driver)
	if !ok || len(d.Spec.TokenRequests) == 0 {
		return nil, false, nil
	}
	if k.Tokens == nil {
		return nil, false, errors.New("ServiceAccountTokenGetter is nil")
	}
	outputs := map[string]authenticationv1.TokenRequestStatus{}
	for _, tr := range d.Spec.TokenRequests {
		audiences := []string{tr.Audience}
		if tr.Audience == "" {
			audiences = []string{}
		}
		resp, err := k.Tokens.Token(ctx, pod.Namespace, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{
				Audiences:         audiences,
				ExpirationSeconds: tr.ExpirationSeconds,
				BoundObjectRef: &authenticationv1.BoundObjectReference{
					APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				},
			},
		})
		if err != nil {
			return nil, false, err
		}
		outputs[tr.Audience] = resp.Status
	}
	tokens, err := json.Marshal(outputs)
	if err != nil {
		return nil, false, err
	}
	inSecrets := d.Spec.ServiceAccountTokenInSecrets != nil && *d.Spec.ServiceAccountTokenInSecrets
	return map[string]string{csiclient.TokensKey: string(tokens)}, inSecrets, nil
}

// noteTokenChange tells, on a republish, whether the driver got the same
// token as last time: the kubelet's token manager renews a token only past
// 80% of its life or 24 hours (docs/kubelet.md §4.6).
func (k *Plugin) noteTokenChange(ctx context.Context, pod *corev1.Pod, v *VolumeSpec, attrs map[string]string, remount bool) {
	key := string(pod.UID) + "/" + v.SpecName
	value, ok := attrs[csiclient.TokensKey]
	if !ok {
		return
	}
	prev, seen := k.SentTokens.swap(key, value)
	if !remount || !seen {
		return
	}
	if prev == value {
		k.Trace.Note(ctx, false, "republish: same tokens as the last NodePublishVolume (the kubelet's token cache)")
	} else {
		k.Trace.Note(ctx, false, "republish: tokens renewed since the last NodePublishVolume")
	}
}
