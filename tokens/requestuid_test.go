package tokens_test

import (
	"context"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// What each RequestUID does with a request's metadata.uid: none, the
// ServiceAccount's, another one (docs/kubelet.md §4.2).
func TestRequestUID(t *testing.T) {
	key, _ := keys(t)
	clock := &fakeClock{now: t0}
	const mismatch = "the UID in the token request (other) does not match the UID of the service account (" + saUID + ")"
	tests := []struct {
		rule     tokens.RequestUID
		uid      string
		wantUID  string
		conflict bool
		warning  string
	}{
		{tokens.RequestUIDValidated, "", saUID, false, ""},
		{tokens.RequestUIDValidated, saUID, saUID, false, ""},
		{tokens.RequestUIDValidated, "other", "", true, ""},
		{tokens.RequestUIDWarned, "", saUID, false, ""},
		{tokens.RequestUIDWarned, "other", "other", false, mismatch + " but TokenRequestServiceAccountUIDValidation is not enabled"},
		{tokens.RequestUIDWiped, "", "", false, ""},
		{tokens.RequestUIDWiped, "other", "", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.rule.String()+"/"+tc.uid, func(t *testing.T) {
			cfg := baseConfig(key, clock.Now)
			cfg.RequestUID = tc.rule
			var warnings []string
			cfg.Warn = func(w string) { warnings = append(warnings, w) }
			req := podRequest("vault", nil)
			req.UID = types.UID(tc.uid)
			out, err := newIssuer(t, cfg).Token(context.Background(), "default", "default", req)
			if tc.conflict {
				if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), mismatch) {
					t.Fatalf("error %v, want the Conflict %q", err, mismatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out.UID) != tc.wantUID {
				t.Errorf("uid %q, want %q", out.UID, tc.wantUID)
			}
			if got := strings.Join(warnings, "\n"); !strings.Contains(got, tc.warning) || (tc.warning == "") != (got == "") {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
			claims, _ := verifyJose(t, out.Status.Token, key.Public(), jose.RS256)
			sa := claims["kubernetes.io"].(map[string]any)["serviceaccount"].(map[string]any)
			if sa["uid"] != saUID {
				t.Errorf("serviceaccount claim %v: the token names the ServiceAccount's UID whatever the request said", sa)
			}
		})
	}
}
