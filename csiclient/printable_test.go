package csiclient

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode ✓": "plain text, ünïcode ✓",
		"title\x1b]0;pwned\x07": `title\x1b]0;pwned\x07`,
		"line\rover\nnext\ttab": `line\x0dover\x0anext\x09tab`,
		"c1 \u009b31m del \x7f": `c1 \u009b31m del \u007f`,
		"bidi \u202eevil\u2066": `bidi \u202eevil\u2066`,
		"bad \xff\xfe utf8":     `bad \xff\xfe utf8`,
		`already \x1b escaped`:  `already \x1b escaped`,
		"":                      "",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
		if again := Printable(Printable(in)); again != Printable(in) {
			t.Errorf("Printable is not idempotent on %q: %q", in, again)
		}
	}
	if got, want := PrintableLines("a\x1b\nb\tc\r"), "a\\x1b\nb\tc\\x0d"; got != want {
		t.Errorf("PrintableLines = %q, want %q", got, want)
	}
}

// TestSensitiveScrub: values collected from a request are replaced in
// free text in each form a message can quote them; too short values and
// other text stay; tokens become fingerprints.
func TestSensitiveScrub(t *testing.T) {
	s := NewSensitive()
	s.Call(Call{Request: publishRequest()}) // secrets user=admin, password=hunter2; tokens
	s.Add(`qu"ote`)
	s.Add("abc") // under MinSensitiveLen
	for in, want := range map[string]string{
		"password hunter2 for admin":   "password " + Stripped + " for " + Stripped,
		`json {"p":"qu\"ote"}`:         `json {"p":"` + Stripped + `"}`,
		"go " + `"qu\"ote"`:            "go " + `"` + Stripped + `"`,
		"abc stays, hunter stays":      "abc stays, hunter stays",
		"bearer " + jwtA:               "bearer <token sha256:ec97fe60>",
		"whole " + tokensJSON + " end": "whole " + Stripped + " end",
	} {
		if got := s.Scrub(in); got != want {
			t.Errorf("Scrub(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestPrintersScrubAndEscape: a driver's error that quotes a secret and
// carries escapes is printed scrubbed and escaped by both printers, and
// the JSON stays JSON; --show-secrets keeps the value but still escapes.
func TestPrintersScrubAndEscape(t *testing.T) {
	s := NewSensitive()
	req := publishRequest()
	call := Call{Method: "NodePublishVolume", Request: req, Code: codes.Internal,
		Err: status.Error(codes.Internal, "got password hunter2\x1b]0;x\x07\nfake line")}
	s.Call(call)
	for _, show := range []bool{false, true} {
		red := Redactor{ShowSecrets: show, Sensitive: s}
		var text, js bytes.Buffer
		NewTextPrinter(&text, red, true, false).Call(call)
		NewJSONPrinter(&js, red).Call(call)
		var rec map[string]any
		if err := json.Unmarshal(js.Bytes(), &rec); err != nil {
			t.Fatalf("JSON line: %v\n%s", err, js.String())
		}
		for where, out := range map[string]string{"text": text.String(), "json": js.String()} {
			if strings.Contains(out, "\x1b") || strings.Contains(out, "\x07") {
				t.Errorf("%s (show %v): raw escape in %q", where, show, out)
			}
			if got := strings.Contains(out, "hunter2"); got != show {
				t.Errorf("%s (show %v): holds the secret: %v\n%s", where, show, got, out)
			}
		}
		if strings.Contains(text.String(), "\nfake line") {
			t.Errorf("the driver's line break starts a line of its own:\n%s", text.String())
		}
	}
}

// TestTextPrinterPrintf: the summary's arguments are escaped whole, line
// breaks included; numbers keep their verbs.
func TestTextPrinterPrintf(t *testing.T) {
	var b bytes.Buffer
	NewTextPrinter(&b, Redactor{}, false, false).Printf("driver %s %q, %d calls in %s\n", "evil\x1b]0;x\x07\nOK", "id\r", 3, time.Second)
	want := `driver evil\x1b]0;x\x07\x0aOK "id\\x0d", 3 calls in 1s` + "\n"
	if b.String() != want {
		t.Errorf("Printf:\n got %q\nwant %q", b.String(), want)
	}
}
