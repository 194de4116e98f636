package tokens_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// Decode reads what Verify reads, without the key: the same header,
// claims and parsed fields, for a token the issuer signed.
func TestDecode(t *testing.T) {
	rsaK, _ := keys(t)
	tok := issue(t, newIssuer(t, baseConfig(rsaK, at(0))), podRequest("vault", nil)).Status.Token
	d, err := tokens.Decode(tok)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := tokens.PublicVerificationKeys(rsaK.Public())
	if err != nil {
		t.Fatal(err)
	}
	v, err := tokens.Verify(tok, tokens.VerifyOptions{Keys: pub, Now: at(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Header) != string(v.Header) || string(d.Claims) != string(v.Claims) {
		t.Errorf("decoded %s %s, verified %s %s", d.Header, d.Claims, v.Header, v.Claims)
	}
	if d.Subject != v.Subject || d.Issuer != iss || !d.Expiry.Equal(v.Expiry) || !d.IssuedAt.Equal(v.IssuedAt) ||
		len(d.Audience) != 1 || d.Audience[0] != "vault" || d.Kubernetes.Pod == nil || d.Kubernetes.Pod.UID != podUID || d.Kubernetes.Node == nil || d.Kubernetes.Node.UID != nodeUID {
		t.Errorf("decoded %+v, verified %+v", d, v)
	}
	if strings.Contains(string(d.Header)+string(d.Claims), strings.Split(tok, ".")[2]) {
		t.Error("the signature is in the decoded parts")
	}
}

func TestDecodeRefuses(t *testing.T) {
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct{ name, token, want string }{
		{"two segments", "a.b", "2 segments"},
		{"header not base64", "@@." + seg("{}") + ".x", "header:"},
		{"claims not JSON", seg(`{"alg":"RS256"}`) + "." + seg("nope") + ".x", "claims: not a JSON object"},
		{"claims null", seg(`{"alg":"RS256"}`) + "." + seg("null") + ".x", "claims: null"},
		{"exp a string", seg(`{"alg":"RS256"}`) + "." + seg(`{"exp":"soon"}`) + ".x", "claims:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tokens.Decode(tc.token)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
