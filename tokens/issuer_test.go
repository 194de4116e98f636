package tokens_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// wantPayload is the exact payload a 1.37 API server signs for the default
// request (empty audience, nil expirationSeconds) bound to pod web-0 on
// node-1: go-jose v2 writes the merged claims as a map, so keys are sorted.
const wantPayload = `{"aud":["https://kubernetes.default.svc.cluster.local"],"exp":1767366245,"iat":1767362645,"iss":"https://kubernetes.default.svc.cluster.local","jti":"0f8fad5b-d9cb-469f-a165-70867728950e","kubernetes.io":{"namespace":"default","node":{"name":"node-1","uid":"a1b2c3d4-0000-4000-8000-000000000001"},"pod":{"name":"web-0","uid":"c0ffee00-1111-4222-8333-444455556666"},"serviceaccount":{"name":"default","uid":"8e1b0bd5-0d1a-4a3f-9b6c-2f4e6a7d9c01"}},"nbf":1767362645,"sub":"system:serviceaccount:default:default"}`

func TestIssueRSA2048AndP256(t *testing.T) {
	rsaK, ecK := keys(t)
	for _, tc := range []struct {
		name   string
		key    crypto.Signer
		alg    jose.SignatureAlgorithm
		header string
	}{
		{"RSA2048", rsaK, jose.RS256, `{"alg":"RS256","kid":"` + kidRSA + `"}`},
		{"P256", ecK, jose.ES256, `{"alg":"ES256","kid":"` + kidP256 + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iss := newIssuer(t, baseConfig(tc.key, func() time.Time { return t0 }))
			if iss.Algorithm() != string(tc.alg) {
				t.Errorf("Algorithm() = %s", iss.Algorithm())
			}
			req := podRequest("", nil)
			orig := req.DeepCopy()
			out := issue(t, iss, req)
			if !reflect.DeepEqual(req, orig) {
				t.Errorf("request was modified: %+v", req)
			}

			// Header: exactly alg and kid, byte for byte.
			header, payload, _, _ := segments(t, out.Status.Token)
			if string(header) != tc.header {
				t.Errorf("header %s, want %s", header, tc.header)
			}
			// Payload: byte for byte what go-jose v2 writes.
			if string(payload) != wantPayload {
				t.Errorf("payload\n got %s\nwant %s", payload, wantPayload)
			}

			// Independent verification 1: go-jose v4.
			claims, h := verifyJose(t, out.Status.Token, tc.key.Public(), tc.alg)
			if h.KeyID != map[jose.SignatureAlgorithm]string{jose.RS256: kidRSA, jose.ES256: kidP256}[tc.alg] || h.Algorithm != string(tc.alg) {
				t.Errorf("go-jose header %+v", h)
			}
			if len(h.ExtraHeaders) != 0 {
				t.Errorf("extra headers %v", h.ExtraHeaders)
			}
			got, _ := json.Marshal(claims)
			jsonEqual(t, "verified claims", got, wantPayload)
			var std josejwt.Claims
			parsed, _ := josejwt.ParseSigned(out.Status.Token, []jose.SignatureAlgorithm{tc.alg})
			if err := parsed.Claims(tc.key.Public(), &std); err != nil {
				t.Fatal(err)
			}
			if err := std.ValidateWithLeeway(josejwt.Expected{
				Issuer:      "https://kubernetes.default.svc.cluster.local",
				Subject:     "system:serviceaccount:default:default",
				AnyAudience: josejwt.Audience{"https://kubernetes.default.svc.cluster.local"},
				ID:          fixedJT,
				Time:        t0,
			}, 0); err != nil {
				t.Errorf("go-jose validation: %v", err)
			}
			// Independent verification 2: crypto/rsa, crypto/ecdsa.
			verifyByHand(t, out.Status.Token, tc.key.Public())

			// The returned object, as the API server returns it.
			want := &authenticationv1.TokenRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default", UID: saUID,
					CreationTimestamp: metav1.NewTime(time.Unix(t0Unix, 0))},
				Spec: authenticationv1.TokenRequestSpec{
					Audiences:         []string{iss.IssuerURL()},
					ExpirationSeconds: new(int64(3600)),
					BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: podUID},
				},
				Status: authenticationv1.TokenRequestStatus{Token: out.Status.Token, ExpirationTimestamp: metav1.NewTime(time.Unix(t0Unix+3600, 0))},
			}
			if !reflect.DeepEqual(out, want) {
				t.Errorf("result\n got %+v\nwant %+v", out, want)
			}
			if got := out.Status.ExpirationTimestamp.UTC().Format(time.RFC3339Nano); got != "2026-01-02T15:04:05Z" {
				t.Errorf("expirationTimestamp %s, want whole seconds 2026-01-02T15:04:05Z", got)
			}
		})
	}
}

func TestAlgorithmsByCurve(t *testing.T) {
	for _, tc := range []struct {
		kind string
		alg  jose.SignatureAlgorithm
	}{{"p384", jose.ES384}, {"p521", jose.ES512}, {"rsa", jose.RS256}, {"ecdsa", jose.ES256}} {
		key, err := tokens.GenerateKey(tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		iss := newIssuer(t, baseConfig(key, func() time.Time { return t0 }))
		out := issue(t, iss, podRequest("", nil))
		_, h := verifyJose(t, out.Status.Token, key.Public(), tc.alg)
		if h.Algorithm != string(tc.alg) {
			t.Errorf("%s: alg %s", tc.kind, h.Algorithm)
		}
	}
	if _, err := tokens.GenerateKey("dsa"); err == nil {
		t.Error("GenerateKey(dsa) succeeded")
	}
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if _, err := tokens.NewIssuer(tokens.IssuerConfig{Key: p224}); err == nil || !strings.Contains(err.Error(), "must be 256, 384, or 521") {
		t.Errorf("P-224 key: %v", err)
	}
}

// opaque hides the concrete key type: only crypto.Signer is visible.
type opaque struct{ s crypto.Signer }

func (o opaque) Public() crypto.PublicKey { return o.s.Public() }
func (o opaque) Sign(r io.Reader, d []byte, opts crypto.SignerOpts) ([]byte, error) {
	return o.s.Sign(r, d, opts)
}

func TestOpaqueSigner(t *testing.T) {
	rsaK, ecK := keys(t)
	for _, tc := range []struct {
		key crypto.Signer
		alg jose.SignatureAlgorithm
		kid string
	}{{rsaK, jose.RS256, kidRSA}, {ecK, jose.ES256, kidP256}} {
		iss := newIssuer(t, baseConfig(opaque{tc.key}, func() time.Time { return t0 }))
		out := issue(t, iss, podRequest("", nil))
		_, h := verifyJose(t, out.Status.Token, tc.key.Public(), tc.alg)
		if h.KeyID != tc.kid {
			t.Errorf("kid %s", h.KeyID)
		}
		verifyByHand(t, out.Status.Token, tc.key.Public())
	}
}

func TestDefaults(t *testing.T) {
	rsaK, _ := keys(t)
	// No key: one RSA-2048 key is generated and kept.
	iss := newIssuer(t, tokens.IssuerConfig{Now: func() time.Time { return t0 }})
	if iss.IssuerURL() != tokens.DefaultIssuer || tokens.DefaultIssuer != "https://kubernetes.default.svc.cluster.local" {
		t.Errorf("issuer %q", iss.IssuerURL())
	}
	if got := iss.APIAudiences(); !reflect.DeepEqual(got, []string{tokens.DefaultIssuer}) {
		t.Errorf("API audiences %v", got)
	}
	if k, ok := iss.Key().(interface{ Size() int }); !ok || k.Size() != 256 || iss.Algorithm() != "RS256" {
		t.Errorf("generated key %T", iss.Key())
	}
	a := issue(t, iss, podRequest("", nil))
	b := issue(t, iss, podRequest("", nil))
	verifyJose(t, a.Status.Token, iss.PublicKey(), jose.RS256)
	verifyJose(t, b.Status.Token, iss.PublicKey(), jose.RS256)
	// Zero config: the gates are off (pre-1.30 behaviour), no jti, no node.
	_, payload, _, _ := segments(t, a.Status.Token)
	if strings.Contains(string(payload), `"jti"`) || strings.Contains(string(payload), `"node"`) || strings.Contains(string(payload), `"warnafter"`) {
		t.Errorf("zero config payload %s", payload)
	}
	// Unknown ServiceAccount: a stable UID (the one manifests derives).
	if a.UID != "f30ae24b-5dc0-4a15-8307-370470d391a7" {
		t.Errorf("derived SA UID %q", a.UID)
	}
	if !strings.Contains(string(payload), `"serviceaccount":{"name":"default","uid":"f30ae24b-5dc0-4a15-8307-370470d391a7"}`) {
		t.Errorf("payload %s", payload)
	}

	// Explicit API audiences; a named audience is kept as asked.
	cfg := baseConfig(rsaK, func() time.Time { return t0 })
	cfg.APIAudiences = []string{"api", "https://kubernetes.default.svc"}
	iss = newIssuer(t, cfg)
	out := issue(t, iss, podRequest("", nil))
	if !reflect.DeepEqual(out.Spec.Audiences, []string{"api", "https://kubernetes.default.svc"}) {
		t.Errorf("defaulted audiences %v", out.Spec.Audiences)
	}
	m, _ := verifyJose(t, out.Status.Token, rsaK.Public(), jose.RS256)
	if !reflect.DeepEqual(m["aud"], []any{"api", "https://kubernetes.default.svc"}) {
		t.Errorf("aud %v", m["aud"])
	}
	out = issue(t, iss, podRequest("vault", new(int64(7200))))
	_, payload, _, _ = segments(t, out.Status.Token)
	if !strings.Contains(string(payload), `"aud":["vault"]`) || !strings.Contains(string(payload), `"exp":1767369845,`) {
		t.Errorf("one audience must still be an array: %s", payload)
	}
	if *out.Spec.ExpirationSeconds != 7200 || !out.Status.ExpirationTimestamp.Equal(&metav1.Time{Time: time.Unix(t0Unix+7200, 0)}) {
		t.Errorf("7200: %v %v", *out.Spec.ExpirationSeconds, out.Status.ExpirationTimestamp)
	}
}

func TestValidation(t *testing.T) {
	rsaK, _ := keys(t)
	iss := newIssuer(t, baseConfig(rsaK, func() time.Time { return t0 }))
	for _, tc := range []struct {
		exp  int64
		want string
	}{
		{599, `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		{0, `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 0: may not specify a duration less than 10 minutes`},
		{-5, `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: -5: may not specify a duration less than 10 minutes`},
		{1<<32 + 1, `TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`},
		{600, ""},
		{1 << 32, ""},
	} {
		out, err := iss.Token(context.Background(), "default", "default", podRequest("", new(tc.exp)))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%d: %v", tc.exp, err)
			} else if *out.Spec.ExpirationSeconds != tc.exp {
				t.Errorf("%d: spec %d", tc.exp, *out.Spec.ExpirationSeconds)
			}
			continue
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%d: error %v\nwant %s", tc.exp, err, tc.want)
			continue
		}
		if !apierrors.IsInvalid(err) {
			t.Errorf("%d: not an Invalid status error", tc.exp)
		}
		var se *apierrors.StatusError
		if !asStatus(err, &se) || len(se.ErrStatus.Details.Causes) != 1 || se.ErrStatus.Details.Causes[0].Field != "spec.expirationSeconds" {
			t.Errorf("%d: causes %+v", tc.exp, se)
		}
	}

	// Other API server checks.
	req := podRequest("", nil)
	req.UID = "other"
	if _, err := iss.Token(context.Background(), "default", "default", req); !apierrors.IsConflict(err) ||
		!strings.Contains(err.Error(), "the UID in the token request (other) does not match the UID of the service account ("+saUID+")") {
		t.Errorf("UID mismatch: %v", err)
	}
	req = podRequest("", nil)
	req.UID = saUID
	if _, err := iss.Token(context.Background(), "default", "default", req); err != nil {
		t.Errorf("matching UID: %v", err)
	}
	req = podRequest("", nil)
	req.Spec.BoundObjectRef.Kind = "ConfigMap"
	if _, err := iss.Token(context.Background(), "default", "default", req); !apierrors.IsBadRequest(err) ||
		err.Error() != "cannot bind token to object of type /v1, Kind=ConfigMap" {
		t.Errorf("ConfigMap binding: %v", err)
	}
	req = podRequest("", nil)
	req.Name = "someone-else"
	if _, err := iss.Token(context.Background(), "default", "default", req); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "metadata.name: Invalid value: \"someone-else\": must match the service account name if specified") {
		t.Errorf("name mismatch: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := iss.Token(ctx, "default", "default", podRequest("", nil)); err != context.Canceled {
		t.Errorf("cancelled: %v", err)
	}
}

func asStatus(err error, se **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	*se = s
	return ok
}

func TestClampToMaxExpiration(t *testing.T) {
	rsaK, _ := keys(t)
	cfg := baseConfig(rsaK, func() time.Time { return t0 })
	cfg.MaxExpiration = 2 * time.Hour
	var warnings []string
	cfg.Warn = func(m string) { warnings = append(warnings, m) }
	iss := newIssuer(t, cfg)
	out := issue(t, iss, podRequest("vault", new(int64(3*3600))))
	if *out.Spec.ExpirationSeconds != 7200 {
		t.Errorf("spec.expirationSeconds %d, want 7200", *out.Spec.ExpirationSeconds)
	}
	if !out.Status.ExpirationTimestamp.Time.Equal(time.Unix(t0Unix+7200, 0)) {
		t.Errorf("status %v", out.Status.ExpirationTimestamp)
	}
	m, _ := verifyJose(t, out.Status.Token, rsaK.Public(), jose.RS256)
	if m["exp"] != float64(t0Unix+7200) {
		t.Errorf("exp %v", m["exp"])
	}
	if !reflect.DeepEqual(warnings, []string{"requested expiration of 10800 seconds shortened to 7200 seconds"}) {
		t.Errorf("warnings %q", warnings)
	}
	// Below the maximum: unchanged, no warning.
	out = issue(t, iss, podRequest("vault", new(int64(3600))))
	if *out.Spec.ExpirationSeconds != 3600 || len(warnings) != 1 {
		t.Errorf("3600 under a 2h max: %d %q", *out.Spec.ExpirationSeconds, warnings)
	}
	// The API server refuses to start with a max outside [1h, 2^32 s].
	for _, d := range []time.Duration{30 * time.Minute, (1<<32 + 1) * time.Second} {
		cfg.MaxExpiration = d
		if _, err := tokens.NewIssuer(cfg); err == nil || err.Error() != "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds" {
			t.Errorf("max %v: %v", d, err)
		}
	}
}

func TestExtendedExpiration3607(t *testing.T) {
	rsaK, _ := keys(t)
	cfg := baseConfig(rsaK, func() time.Time { return t0 })
	cfg.APIAudiences = []string{iss, "api"}
	issuer := newIssuer(t, cfg)

	// Pod-bound, 3607, audiences defaulted to the API audiences: extended.
	out := issue(t, issuer, podRequest("", new(int64(3607))))
	_, payload, _, _ := segments(t, out.Status.Token)
	want := `{"aud":["https://kubernetes.default.svc.cluster.local","api"],"exp":1798898645,"iat":1767362645,"iss":"https://kubernetes.default.svc.cluster.local","jti":"0f8fad5b-d9cb-469f-a165-70867728950e","kubernetes.io":{"namespace":"default","node":{"name":"node-1","uid":"a1b2c3d4-0000-4000-8000-000000000001"},"pod":{"name":"web-0","uid":"c0ffee00-1111-4222-8333-444455556666"},"serviceaccount":{"name":"default","uid":"8e1b0bd5-0d1a-4a3f-9b6c-2f4e6a7d9c01"},"warnafter":1767366252},"nbf":1767362645,"sub":"system:serviceaccount:default:default"}`
	if string(payload) != want {
		t.Errorf("extended payload\n got %s\nwant %s", payload, want)
	}
	verifyJose(t, out.Status.Token, rsaK.Public(), jose.RS256)
	if *out.Spec.ExpirationSeconds != 3607 {
		t.Errorf("spec.expirationSeconds %d, want 3607", *out.Spec.ExpirationSeconds)
	}
	if got := out.Status.ExpirationTimestamp.UTC().Format(time.RFC3339); got != "2026-01-02T15:04:12Z" {
		t.Errorf("status.expirationTimestamp %s, want now+3607", got)
	}
	// A subset of the API audiences also qualifies.
	out = issue(t, issuer, podRequest("api", new(int64(3607))))
	if m, _ := verifyJose(t, out.Status.Token, rsaK.Public(), jose.RS256); m["exp"] != float64(t0Unix+365*24*3600) {
		t.Errorf("subset audience: exp %v", m["exp"])
	}

	notExtended := func(name string, iss *tokens.Issuer, req *authenticationv1.TokenRequest, wantExp int64) {
		t.Helper()
		out := issue(t, iss, req)
		m, _ := verifyJose(t, out.Status.Token, rsaK.Public(), jose.RS256)
		if m["exp"] != float64(t0Unix+wantExp) {
			t.Errorf("%s: exp %v, want now+%d", name, m["exp"], wantExp)
		}
		if k := m["kubernetes.io"].(map[string]any); k["warnafter"] != nil {
			t.Errorf("%s: warnafter %v", name, k["warnafter"])
		}
		if !out.Status.ExpirationTimestamp.Time.Equal(time.Unix(t0Unix+wantExp, 0)) {
			t.Errorf("%s: status %v", name, out.Status.ExpirationTimestamp)
		}
	}
	notExtended("foreign audience", issuer, podRequest("vault", new(int64(3607))), 3607)
	notExtended("3608", issuer, podRequest("", new(int64(3608))), 3608)
	unbound := podRequest("", new(int64(3607)))
	unbound.Spec.BoundObjectRef = nil
	notExtended("not pod-bound", issuer, unbound, 3607)

	cfg.ExtendExpiration = false
	notExtended("extension off", newIssuer(t, cfg), podRequest("", new(int64(3607))), 3607)

	cfg.ExtendExpiration = true
	cfg.MaxExpiration = time.Hour // clamped to 3600 first, so no longer 3607
	notExtended("clamped first", newIssuer(t, cfg), podRequest("", new(int64(3607))), 3600)
}

func TestGatesAndNodeClaim(t *testing.T) {
	rsaK, _ := keys(t)
	k8s := func(cfg tokens.IssuerConfig, req *authenticationv1.TokenRequest) (string, map[string]any) {
		t.Helper()
		out := issue(t, newIssuer(t, cfg), req)
		m, _ := verifyJose(t, out.Status.Token, rsaK.Public(), jose.RS256)
		b, _ := json.Marshal(m["kubernetes.io"])
		return string(b), m
	}
	clock := func() time.Time { return t0 }

	cfg := baseConfig(rsaK, clock)
	cfg.JTI, cfg.PodNodeInfo = false, false // 1.29 defaults
	got, m := k8s(cfg, podRequest("", nil))
	if _, ok := m["jti"]; ok {
		t.Error("jti with ServiceAccountTokenJTI off")
	}
	if want := `{"namespace":"default","pod":{"name":"web-0","uid":"c0ffee00-1111-4222-8333-444455556666"},"serviceaccount":{"name":"default","uid":"8e1b0bd5-0d1a-4a3f-9b6c-2f4e6a7d9c01"}}`; got != want {
		t.Errorf("gates off:\n got %s\nwant %s", got, want)
	}

	// Node object unknown: name only.
	cfg = baseConfig(rsaK, clock)
	cfg.PodNode = func(ns, pod string) (string, types.UID, bool) { return "node-9", "", true }
	if got, _ := k8s(cfg, podRequest("", nil)); !strings.Contains(got, `"node":{"name":"node-9"},`) {
		t.Errorf("name-only node: %s", got)
	}
	// Pod not scheduled (no nodeName) or unknown: no node claim.
	cfg.PodNode = func(ns, pod string) (string, types.UID, bool) { return "", "", true }
	if got, _ := k8s(cfg, podRequest("", nil)); strings.Contains(got, `"node"`) {
		t.Errorf("unscheduled pod: %s", got)
	}
	cfg.PodNode = nil
	if got, _ := k8s(cfg, podRequest("", nil)); strings.Contains(got, `"node"`) {
		t.Errorf("no PodNode: %s", got)
	}
	// Unbound token: no pod, no node.
	cfg = baseConfig(rsaK, clock)
	req := podRequest("", nil)
	req.Spec.BoundObjectRef = nil
	if got, _ := k8s(cfg, req); got != `{"namespace":"default","serviceaccount":{"name":"default","uid":"8e1b0bd5-0d1a-4a3f-9b6c-2f4e6a7d9c01"}}` {
		t.Errorf("unbound: %s", got)
	}
	// Default jti generator: UUIDv4, different every time.
	cfg.NewUID = nil
	_, m1 := k8s(cfg, podRequest("", nil))
	_, m2 := k8s(cfg, podRequest("", nil))
	j1, _ := m1["jti"].(string)
	if len(j1) != 36 || j1[14] != '4' || j1 == m2["jti"] {
		t.Errorf("jti %q %q", j1, m2["jti"])
	}
}

// TestStatusJSON: the value the kubelet puts under
// csi.storage.k8s.io/serviceAccount.tokens (docs/kubelet.md §4.3).
func TestStatusJSON(t *testing.T) {
	rsaK, _ := keys(t)
	// 2026-01-02T14:04:05.123456789Z + 3600 s, fraction dropped.
	iss := newIssuer(t, baseConfig(rsaK, func() time.Time { return t0 }))
	a := issue(t, iss, podRequest("", nil))
	v := issue(t, iss, podRequest("vault", new(int64(7200))))
	b, err := json.Marshal(map[string]authenticationv1.TokenRequestStatus{"vault": v.Status, "": a.Status})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"":{"token":"%s","expirationTimestamp":"2026-01-02T15:04:05Z"},"vault":{"token":"%s","expirationTimestamp":"2026-01-02T16:04:05Z"}}`, a.Status.Token, v.Status.Token)
	if string(b) != want {
		t.Errorf("tokens JSON\n got %s\nwant %s", b, want)
	}
	// The zero time is null.
	b, _ = json.Marshal(map[string]authenticationv1.TokenRequestStatus{"": {Token: "x"}})
	if string(b) != `{"":{"token":"x","expirationTimestamp":null}}` {
		t.Errorf("zero: %s", b)
	}
}

func TestJWKS(t *testing.T) {
	rsaK, ecK := keys(t)
	for _, tc := range []struct {
		file string
		keys []crypto.PublicKey
	}{
		{"jwks-rsa2048.json", []crypto.PublicKey{rsaK.Public()}},
		{"jwks-p256.json", []crypto.PublicKey{ecK}}, // a private key is published as its public half
	} {
		got, err := tokens.JWKS(tc.keys...)
		if err != nil {
			t.Fatal(err)
		}
		want := readTestdata(t, tc.file)
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.file, got, want)
		}
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(got, &set); err != nil || len(set.Keys) != 1 || !set.Keys[0].Valid() || !set.Keys[0].IsPublic() {
			t.Errorf("go-jose reads %s: %v %+v", tc.file, err, set)
		}
	}
	// Both keys, and the Issuer's own document; tokens verify against the set.
	all, err := tokens.JWKS(rsaK.Public(), ecK.Public())
	if err != nil {
		t.Fatal(err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(all, &set); err != nil || len(set.Keys) != 2 {
		t.Fatalf("%v %s", err, all)
	}
	for _, k := range []crypto.Signer{rsaK, ecK} {
		iss := newIssuer(t, baseConfig(k, func() time.Time { return t0 }))
		doc, _ := iss.JWKS()
		if !strings.Contains(string(all), string(doc[len(`{"keys":[`):len(doc)-2])) {
			t.Errorf("issuer JWKS %s not in %s", doc, all)
		}
		tok := issue(t, iss, podRequest("", nil)).Status.Token
		parsed, _ := josejwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256, jose.ES256})
		found := set.Key(parsed.Headers[0].KeyID)
		if len(found) != 1 {
			t.Fatalf("kid %s not in JWKS", parsed.Headers[0].KeyID)
		}
		var c josejwt.Claims
		if err := parsed.Claims(found[0].Key, &c); err != nil {
			t.Errorf("verify with JWKS key: %v", err)
		}
	}
	if doc, err := tokens.JWKS(); err != nil || string(doc) != `{"keys":[]}` {
		t.Errorf("empty JWKS %s %v", doc, err)
	}
	if _, err := tokens.JWKS("not a key"); err == nil {
		t.Error("JWKS of a string succeeded")
	}
	for k, want := range map[crypto.PublicKey]string{rsaK.Public(): kidRSA, ecK: kidP256} {
		if got, err := tokens.KeyID(k); err != nil || got != want {
			t.Errorf("KeyID %s %v, want %s", got, err, want)
		}
	}
}
