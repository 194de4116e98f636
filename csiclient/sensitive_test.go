package csiclient

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// secretValue is a secret whose base64 has the characters that differ
// between base64 and base64url ("?>" encodes to "Pz4" in std, "Pz4" too;
// the "~~~" gives "+"/"-" and "/"/"_"), of a length (14) that is not a
// multiple of 3, so that padding and the alignments all matter.
const secretValue = "pa?>ss~~~w0rd!"

// encodedForms are the forms a driver can echo secretValue in.
func encodedForms(v string) map[string]string {
	b := []byte(v)
	return map[string]string{
		"plain":             v,
		"upper":             strings.ToUpper(v),
		"base64":            base64.StdEncoding.EncodeToString(b),
		"base64 raw":        base64.RawStdEncoding.EncodeToString(b),
		"base64url":         base64.URLEncoding.EncodeToString(b),
		"base64url raw":     base64.RawURLEncoding.EncodeToString(b),
		"hex":               hex.EncodeToString(b),
		"HEX":               strings.ToUpper(hex.EncodeToString(b)),
		"split real \\n":    v[:5] + "\n" + v[5:],
		"split escaped \\n": v[:7] + `\n` + v[7:],
		"split CRLF":        v[:3] + "\r\n" + v[3:],
	}
}

// TestScrubEncodedForms: each form of a collected secret is stripped,
// alone and inside other text, and leaves no part of the secret.
func TestScrubEncodedForms(t *testing.T) {
	s := NewSensitive()
	s.Add(secretValue)
	for name, form := range encodedForms(secretValue) {
		for _, in := range []string{form, "driver says: " + form + " (twice: " + form + ")"} {
			got := s.Scrub(in)
			if !strings.Contains(got, Stripped) || strings.Contains(got, form) {
				t.Errorf("%s: Scrub(%q) = %q", name, in, got)
			}
			for _, part := range []string{"ss~~~w0", "w0rd!", "pa?>s"} {
				if strings.Contains(got, part) {
					t.Errorf("%s: %q keeps %q of the secret", name, got, part)
				}
			}
		}
	}
}

// TestScrubBase64Alignments: the secret inside a longer base64 text (a
// Secret's data:, a JSON document encoded whole), after 0 to 5 bytes of
// other text, in base64 and base64url, padded or not: the characters
// only the secret decides are stripped.
func TestScrubBase64Alignments(t *testing.T) {
	s := NewSensitive()
	s.Add(secretValue)
	for lead := range 6 {
		for trail := range 3 {
			blob := []byte(strings.Repeat("x", lead) + secretValue + strings.Repeat("y", trail))
			for name, enc := range map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding, "raw": base64.RawStdEncoding, "rawurl": base64.RawURLEncoding} {
				in := `{"data":"` + enc.EncodeToString(blob) + `"}`
				got := s.Scrub(in)
				if !strings.Contains(got, Stripped) {
					t.Errorf("%s, %d bytes before, %d after: %s not scrubbed", name, lead, trail, in)
					continue
				}
				// What is left of the encoding holds at most the two
				// characters at each end that the neighbours share.
				rest := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(got, `{"data":"`), `"}`), Stripped, "")
				if len(rest) > len(enc.EncodeToString([]byte(strings.Repeat("x", lead)+strings.Repeat("y", trail))))+4 {
					t.Errorf("%s, %d before, %d after: %q keeps too much of %q", name, lead, trail, got, in)
				}
			}
		}
	}
}

// TestScrubSplitEverywhere: a line break (real or escaped, as JSON and
// Go write it) at any place in the secret, and in its base64.
func TestScrubSplitEverywhere(t *testing.T) {
	s := NewSensitive()
	s.Add(secretValue)
	b64 := base64.StdEncoding.EncodeToString([]byte(secretValue))
	for _, v := range []string{secretValue, b64} {
		for i := 1; i < len(v); i++ {
			for _, br := range []string{"\n", `\n`, "\r\n", `\\n`, `\x0a`} {
				in := "at " + v[:i] + br + v[i:] + " end"
				got := s.Scrub(in)
				// The base64's last characters ("E=") hold padding
				// and two bits: they may stay, with the break.
				rest := strings.TrimSuffix(strings.TrimPrefix(got, "at "+Stripped), " end")
				if rest = strings.Replace(rest, br, "", 1); !strings.HasPrefix(got, "at "+Stripped) || len(rest) > 2 {
					t.Errorf("Scrub(%q) = %q", in, got)
				}
			}
		}
	}
	// Split twice, and inside a JSON line.
	line, _ := json.Marshal(map[string]string{"error": "got " + secretValue[:3] + "\n" + secretValue[3:9] + "\n" + secretValue[9:]})
	if got := s.Scrub(string(line)); strings.Contains(got, "w0rd") || !strings.Contains(got, Stripped) {
		t.Errorf("JSON line split twice: %s", got)
	}
}

// TestScrubKeepsOtherText: text without the secret is not changed, line
// breaks and base64 included; a secret of fewer than 4 characters is not
// searched for (it would strip every such piece of every message).
func TestScrubKeepsOtherText(t *testing.T) {
	s := NewSensitive()
	s.Add(secretValue)
	s.Add("abc")
	for _, in := range []string{
		"mount failed:\nexit status 32\\n retry",
		base64.StdEncoding.EncodeToString([]byte("a long text that is not the secret at all, pa?>ss~~~w0r")),
		"abc is short; ABC, 616263, YWJj stay",
	} {
		if got := s.Scrub(in); got != in {
			t.Errorf("Scrub(%q) = %q", in, got)
		}
	}
}

// TestScrubTokensEncoded: a service account token the kubelet handed
// over is found base64-encoded too (as is, the JWT pattern finds it).
func TestScrubTokensEncoded(t *testing.T) {
	s := NewSensitive()
	s.Call(Call{Request: publishRequest()})
	in := "token " + base64.StdEncoding.EncodeToString([]byte(jwtB))
	if got := s.Scrub(in); got != "token "+Stripped {
		t.Errorf("Scrub(%q) = %q", in, got)
	}
}

// TestSensitiveBounded: past maxFormBytes of forms, a new value is still
// searched for as is, no longer in disguise.
func TestSensitiveBounded(t *testing.T) {
	s := NewSensitive()
	big := strings.Repeat("k", 1<<20)
	for i := 0; s.size <= maxFormBytes; i++ {
		s.Add(fmt.Sprintf("%d%s", i, big))
	}
	before := s.size
	s.Add("late-secret-value")
	if got := s.Scrub("a late-secret-value b"); got != "a "+Stripped+" b" {
		t.Errorf("Scrub = %q", got)
	}
	if s.size-before > 4*len("late-secret-value") {
		t.Errorf("past the bound %d bytes of forms were added", s.size-before)
	}
}

// TestScrubSecretWithLineBreak: a secret that holds a line break itself
// (a PEM key) is found in a text of several lines, with its break as is
// or escaped.
func TestScrubSecretWithLineBreak(t *testing.T) {
	s := NewSensitive()
	s.Add("-----BEGIN KEY-----\nMIIBVwIBADANBg\n-----END KEY-----")
	for _, in := range []string{
		"line one\nkey -----BEGIN KEY-----\nMIIBVwIBADANBg\n-----END KEY----- end\nline three",
		`{"error":"key -----BEGIN KEY-----\nMIIBVwIBADANBg\n-----END KEY----- end"}` + "\n",
	} {
		if got := s.Scrub(in); strings.Contains(got, "MIIBVwIBADANBg") || !strings.Contains(got, Stripped) {
			t.Errorf("Scrub(%q) = %q", in, got)
		}
	}
}
