// Package tokentest holds the tests' stand-ins for the API server's
// TokenRequest API: a token of its shape and an issuer that hands it out.
package tokentest

import (
	"context"
	"encoding/base64"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodUID is the uid of the pod team/app that JWT's tokens are bound to.
const PodUID = "70c0e2e5-0000-4000-8000-00000000a001"

// JWT is a token of the API server's shape for the service account
// team/reader of pod team/app on node n1, issued at iat for ten minutes;
// its signature is made up (nothing here verifies it).
func JWT(aud string, iat int64) string {
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	claims := `{"aud":["` + aud + `"],"exp":` + itoa(iat+600) + `,"iat":` + itoa(iat) + `,"iss":"https://kubernetes.default.svc.cluster.local",` +
		`"kubernetes.io":{"namespace":"team","node":{"name":"n1","uid":"a1b2c3d4-0000-4000-8000-000000000001"},"pod":{"name":"app","uid":"` + PodUID + `"},` +
		`"serviceaccount":{"name":"reader","uid":"5a5a5a5a-0000-4000-8000-00000000a002"}},"nbf":` + itoa(iat) + `,"sub":"system:serviceaccount:team:reader"}`
	return seg(`{"alg":"RS256","kid":"k1"}`) + "." + seg(claims) + ".c2lnbmF0dXJlLXNlY3JldA"
}

// Issuer answers every TokenRequest with JWT, or fails with Err.
type Issuer struct {
	JWT string
	Err error
}

// Token answers as the API server does: the request back with the token.
func (f *Issuer) Token(ctx context.Context, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	out := req.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{Token: f.JWT, ExpirationTimestamp: metav1.NewTime(time.Unix(1767362645+600, 0))}
	return out, nil
}

// VaultRequest is the kubelet's request for audience vault, ten minutes,
// bound to pod team/app.
func VaultRequest() *authenticationv1.TokenRequest {
	exp := int64(600)
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}, ExpirationSeconds: &exp,
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "app", UID: PodUID}}}
}
