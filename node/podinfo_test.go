package node

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// docs/kubelet.md §3: volume_context is the volume's attributes, plus the five
// pod-info keys only with podInfoOnMount: true; ephemeral is "true" or
// "false"; NodeStage gets only the PV's attributes.
func TestVolumeContextPodInfo(t *testing.T) {
	podInfo := func(ephemeral string) map[string]string {
		return map[string]string{
			"csi.storage.k8s.io/pod.name":            "app-1",
			"csi.storage.k8s.io/pod.namespace":       "default",
			"csi.storage.k8s.io/pod.uid":             "pod-uid-1",
			"csi.storage.k8s.io/serviceAccount.name": "app-sa",
			"csi.storage.k8s.io/ephemeral":           ephemeral,
		}
	}
	with := func(base, extra map[string]string) map[string]string {
		out := maps.Clone(base)
		maps.Copy(out, extra)
		return out
	}
	pvAttrs := map[string]string{"size": "small"}
	pv := pvDoc("pv-1", "vol-1", "data-1", "csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, volumeAttributes: {size: small}}")
	inlinePod := podDoc("app-1", "pod-uid-1", inlineVol("scratch", "volumeAttributes: {size: small}"))
	tests := []struct {
		name      string
		manifests string
		want      map[string]string
	}{
		{"PV, no CSIDriver object", docs(vaDoc(attachmentVol1, "pv-1", true), pv, pvc1, pod1), pvAttrs},
		{"PV, podInfoOnMount unset", docs(noAttachDriver, pv, pvc1, pod1), pvAttrs},
		{"PV, podInfoOnMount false", docs(csiDriverDoc("attachRequired: false", "podInfoOnMount: false"), pv, pvc1, pod1), pvAttrs},
		{"PV, podInfoOnMount true", docs(csiDriverDoc("attachRequired: false", "podInfoOnMount: true"), pv, pvc1, pod1), with(pvAttrs, podInfo("false"))},
		{"inline, podInfoOnMount false", docs(csiDriverDoc("volumeLifecycleModes: [Ephemeral]"), inlinePod), pvAttrs},
		{"inline, podInfoOnMount true", docs(csiDriverDoc("podInfoOnMount: true", "volumeLifecycleModes: [Ephemeral]"), inlinePod), with(pvAttrs, podInfo("true"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver(capStage))
			e.mountOK("app-1")
			calls := e.drv.Calls()
			got := one[*csi.NodePublishVolumeRequest](t, calls, "NodePublishVolume").GetVolumeContext()
			if !maps.Equal(got, tc.want) {
				t.Errorf("NodePublish volume_context:\n got %v\nwant %v", got, tc.want)
			}
			for _, c := range only(calls, "NodeStageVolume") {
				if got := c.Request.(*csi.NodeStageVolumeRequest).GetVolumeContext(); !maps.Equal(got, pvAttrs) {
					t.Errorf("NodeStage volume_context = %v, want only the PV's attributes %v", got, pvAttrs)
				}
			}
		})
	}
}

// docs/kubelet.md §3: kubelet keys overwrite user attributes with the same key;
// the manifests' own maps are not changed between pods.
func TestVolumeContextKubeletKeysWin(t *testing.T) {
	pv := pvDoc("pv-1", "vol-1", "data-1", `csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, volumeAttributes: {"csi.storage.k8s.io/pod.name": spoofed, "csi.storage.k8s.io/ephemeral": "maybe", mine: kept}}`)
	e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "podInfoOnMount: true"), pv, pvc1, pod1,
		podDoc("app-2", "pod-uid-2", claimVol("data", "data-1"))), newFakeDriver(capStage))
	e.mountOK("app-1")
	e.mountOK("app-2")
	calls := e.drv.Calls()
	pubs := only(calls, "NodePublishVolume")
	for i, wantPod := range []string{"app-1", "app-2"} {
		got := pubs[i].Request.(*csi.NodePublishVolumeRequest).GetVolumeContext()
		if got["csi.storage.k8s.io/pod.name"] != wantPod || got["csi.storage.k8s.io/ephemeral"] != "false" || got["mine"] != "kept" {
			t.Errorf("pod %s: volume_context = %v", wantPod, got)
		}
	}
	stageCtx := one[*csi.NodeStageVolumeRequest](t, calls, "NodeStageVolume").GetVolumeContext()
	want := map[string]string{"csi.storage.k8s.io/pod.name": "spoofed", "csi.storage.k8s.io/ephemeral": "maybe", "mine": "kept"}
	if !maps.Equal(stageCtx, want) {
		t.Errorf("NodeStage volume_context = %v, want the PV's attributes untouched %v", stageCtx, want)
	}
	pv1obj, _ := e.cluster.PersistentVolume("pv-1")
	if got := pv1obj.Spec.CSI.VolumeAttributes; !maps.Equal(got, want) {
		t.Errorf("PV attributes changed to %v", got)
	}
}

func TestMergeMap(t *testing.T) {
	tests := []struct {
		name          string
		first, second map[string]string
		want          map[string]string
	}{
		{"second overwrites", map[string]string{"a": "1", "b": "1"}, map[string]string{"b": "2"}, map[string]string{"a": "1", "b": "2"}},
		{"nil first yields second", nil, map[string]string{"b": "2"}, map[string]string{"b": "2"}},
		{"nil second", map[string]string{"a": "1"}, nil, map[string]string{"a": "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := csiplugin.MergeMap(tc.first, tc.second); !maps.Equal(got, tc.want) {
				t.Errorf("mergeMap = %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeTokens answers TokenRequests with "token-<audience>" and a fixed
// expiry, and records the requests.
type fakeTokens struct {
	mu    sync.Mutex
	token func(aud string) string
	err   error
	got   []tokenCall
}

type tokenCall struct {
	Namespace, ServiceAccount string
	Spec                      authenticationv1.TokenRequestSpec
}

var tokenExpiry = metav1.NewTime(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))

func (f *fakeTokens) Token(_ context.Context, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, tokenCall{ns, sa, req.Spec})
	if f.err != nil {
		return nil, f.err
	}
	aud := strings.Join(req.Spec.Audiences, ",")
	tok := "token-" + aud
	if f.token != nil {
		tok = f.token(aud)
	}
	return &authenticationv1.TokenRequest{Spec: req.Spec, Status: authenticationv1.TokenRequestStatus{Token: tok, ExpirationTimestamp: tokenExpiry}}, nil
}

// docs/kubelet.md §3, §4.1, §4.3, §4.4, §21.8: tokens go to volume_context (even
// without podInfoOnMount) or, with serviceAccountTokenInSecrets, to secrets
// over the publish secret; one TokenRequest per entry, bound to the pod.
func TestServiceAccountTokens(t *testing.T) {
	const key = "csi.storage.k8s.io/serviceAccount.tokens"
	const wantJSON = `{"":{"token":"token-","expirationTimestamp":"2026-01-02T15:04:05Z"},"vault":{"token":"token-vault","expirationTimestamp":"2026-01-02T15:04:05Z"}}`
	pv := pvDoc("pv-1", "vol-1", "data-1",
		`csi: {driver: hostpath.csi.k8s.io, volumeHandle: vol-1, volumeAttributes: {"csi.storage.k8s.io/serviceAccount.tokens": user}, nodePublishSecretRef: {name: pub, namespace: default}}`)
	secret := `apiVersion: v1
kind: Secret
metadata: {name: pub, namespace: default}
stringData: {"csi.storage.k8s.io/serviceAccount.tokens": user-secret, password: pw}`
	tests := []struct {
		name        string
		driver      string
		wantContext map[string]string
		wantSecrets map[string]string
	}{
		{
			name:        "in volume_context, over the user attribute, without podInfoOnMount",
			driver:      csiDriverDoc("attachRequired: false", "tokenRequests: [{audience: vault}, {audience: ''}]"),
			wantContext: map[string]string{key: wantJSON},
			wantSecrets: map[string]string{key: "user-secret", "password": "pw"},
		},
		{
			name:        "serviceAccountTokenInSecrets: in secrets, over the secret's key",
			driver:      csiDriverDoc("attachRequired: false", "tokenRequests: [{audience: vault}, {audience: ''}]", "serviceAccountTokenInSecrets: true"),
			wantContext: map[string]string{key: "user"},
			wantSecrets: map[string]string{key: wantJSON, "password": "pw"},
		},
		{
			name:        "no tokenRequests",
			driver:      csiDriverDoc("attachRequired: false", "podInfoOnMount: false"),
			wantContext: map[string]string{key: "user"},
			wantSecrets: map[string]string{key: "user-secret", "password": "pw"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, docs(tc.driver, pv, pvc1, pod1, secret), newFakeDriver(capStage))
			tokens := &fakeTokens{}
			e.k.vm.Tokens = tokens
			e.mountOK("app-1")
			calls := e.drv.Calls()
			req := one[*csi.NodePublishVolumeRequest](t, calls, "NodePublishVolume")
			if got := req.GetVolumeContext(); !maps.Equal(got, tc.wantContext) {
				t.Errorf("volume_context:\n got %v\nwant %v", got, tc.wantContext)
			}
			if got := req.GetSecrets(); !maps.Equal(got, tc.wantSecrets) {
				t.Errorf("secrets:\n got %v\nwant %v", got, tc.wantSecrets)
			}
			stage := one[*csi.NodeStageVolumeRequest](t, calls, "NodeStageVolume")
			if got, want := stage.GetVolumeContext(), map[string]string{key: "user"}; !maps.Equal(got, want) {
				t.Errorf("NodeStage volume_context = %v, want only the PV's attributes %v", got, want)
			}
			if len(stage.GetSecrets()) != 0 {
				t.Errorf("NodeStage secrets = %v, want {}", stage.GetSecrets())
			}
		})
	}
}

// docs/kubelet.md §4.1: the TokenRequests themselves.
func TestTokenRequestSpec(t *testing.T) {
	e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "tokenRequests: [{audience: vault, expirationSeconds: 3607}, {audience: ''}]"), pv1, pvc1, pod1), newFakeDriver())
	tokens := &fakeTokens{}
	e.k.vm.Tokens = tokens
	e.mountOK("app-1")
	if len(tokens.got) != 2 {
		t.Fatalf("%d TokenRequests, want 2", len(tokens.got))
	}
	for i, want := range []struct {
		aud []string
		exp *int64
	}{{[]string{"vault"}, ptrTo(int64(3607))}, {[]string{}, nil}} {
		got := tokens.got[i]
		if got.Namespace != "default" || got.ServiceAccount != "app-sa" {
			t.Errorf("request %d: namespace/sa = %s/%s, want default/app-sa", i, got.Namespace, got.ServiceAccount)
		}
		if got.Spec.Audiences == nil || strings.Join(got.Spec.Audiences, ",") != strings.Join(want.aud, ",") || len(got.Spec.Audiences) != len(want.aud) {
			t.Errorf("request %d: audiences = %#v, want %#v", i, got.Spec.Audiences, want.aud)
		}
		if (got.Spec.ExpirationSeconds == nil) != (want.exp == nil) || (want.exp != nil && *got.Spec.ExpirationSeconds != *want.exp) {
			t.Errorf("request %d: expirationSeconds = %v, want %v", i, got.Spec.ExpirationSeconds, want.exp)
		}
		ref := got.Spec.BoundObjectRef
		if ref == nil || *ref != (authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "app-1", UID: "pod-uid-1"}) {
			t.Errorf("request %d: boundObjectRef = %+v", i, ref)
		}
	}
}

// docs/kubelet.md §21.8: Go encoding/json escapes HTML characters in the tokens value.
func TestTokensJSONEscapesHTML(t *testing.T) {
	e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "tokenRequests: [{audience: a}]"), pv1, pvc1, pod1), newFakeDriver())
	e.k.vm.Tokens = &fakeTokens{token: func(string) string { return "x<y&z>" }}
	e.mountOK("app-1")
	got := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume").GetVolumeContext()["csi.storage.k8s.io/serviceAccount.tokens"]
	const want = `{"a":{"token":"x\u003cy\u0026z\u003e","expirationTimestamp":"2026-01-02T15:04:05Z"}}`
	if got != want {
		t.Errorf("tokens = %s, want %s", got, want)
	}
}

// docs/kubelet.md §4.1: a failed TokenRequest (or none possible) is transient,
// with the source's typo, and no NodePublish.
func TestTokenFailure(t *testing.T) {
	tests := []struct {
		name   string
		issuer csiplugin.TokenIssuer
		want   string
	}{
		{"no issuer", nil, "kubernetes.io/csi: mounter.SetUpAt failed to get service accoount token attributes: ServiceAccountTokenGetter is nil"},
		{"issuer error", &fakeTokens{err: errors.New("denied")}, "kubernetes.io/csi: mounter.SetUpAt failed to get service accoount token attributes: denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "tokenRequests: [{audience: vault}]"), pv1, pvc1, pod1), newFakeDriver())
			if tc.issuer != nil {
				e.k.vm.Tokens = tc.issuer
			}
			ve := volErr(t, e.mount("app-1"))
			if ve.Err.Error() != tc.want || ve.Kind != csiplugin.Transient {
				t.Errorf("error = %q (%v), want %q (transient)", ve.Err, ve.Kind, tc.want)
			}
			if n := len(only(e.drv.Calls(), "NodePublishVolume")); n != 0 {
				t.Errorf("%d NodePublish calls", n)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
