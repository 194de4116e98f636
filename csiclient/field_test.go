package csiclient

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// controlClasses are the characters a terminal or a reader acts on, by
// class, each with the escape every output shows instead.
var controlClasses = map[string]struct{ raw, escaped string }{
	"ESC":          {"\x1b", `\x1b`},
	"BEL":          {"\x07", `\x07`},
	"CR":           {"\r", `\x0d`},
	"NUL":          {"\x00", `\x00`},
	"DEL":          {"\x7f", `\u007f`},
	"C1 CSI":       {"\u009b", `\u009b`},
	"C1 NEL":       {"\u0085", `\u0085`},
	"LRE U+202A":   {"\u202a", `\u202a`},
	"RLO U+202E":   {"\u202e", `\u202e`},
	"LRI U+2066":   {"\u2066", `\u2066`},
	"PDI U+2069":   {"\u2069", `\u2069`},
	"not UTF-8":    {"\xff", `\xff`},
	"LF, one line": {"\n", `\x0a`},
}

// TestFieldEscapesEachClass: Field escapes each class in one-line fields;
// in texts of several lines it keeps LF and TAB only; a JSON string is
// left to JSON, whose encoding keeps it harmless; EscapeOnly escapes
// without scrubbing (a record of -o json rendered by a template).
func TestFieldEscapesEachClass(t *testing.T) {
	s := NewSensitive()
	s.Add("hunter22")
	red := Redactor{Sensitive: s}
	for name, c := range controlClasses {
		in := "a" + c.raw + "b hunter22"
		if got, want := red.Text(in), "a"+c.escaped+"b "+Stripped; got != want {
			t.Errorf("%s: Text(%q) = %q, want %q", name, in, got, want)
		}
		lines := red.TextLines(in)
		if name == "LF, one line" {
			if lines != "a\nb "+Stripped {
				t.Errorf("TextLines(%q) = %q", in, lines)
			}
		} else if lines != "a"+c.escaped+"b "+Stripped {
			t.Errorf("%s: TextLines(%q) = %q", name, in, lines)
		}
		if got := EscapeOnly().Text(in); got != "a"+c.escaped+"b hunter22" {
			t.Errorf("%s: EscapeOnly().Text(%q) = %q", name, in, got)
		}
		var back map[string]string
		line := red.JSONLine(map[string]string{"error": in})
		if err := json.Unmarshal(line, &back); err != nil || back["error"] != "a"+c.raw+"b "+Stripped && name != "not UTF-8" {
			t.Errorf("%s: JSONLine = %s (%v)", name, line, err)
		}
		if strings.Contains(string(line), c.raw) {
			t.Errorf("%s: JSONLine holds it raw: %q", name, line)
		}
	}
	if got := red.TextLines("a\tb\nc"); got != "a\tb\nc" {
		t.Errorf("TextLines(tab, LF) = %q", got)
	}
}

// TestFieldCuts: a 12 MB string prints as MaxField bytes and a marker
// with its length, in every form; a text of many long lines is cut line
// by line and in all; a secret the cut runs through is stripped whole,
// not shown in part; JSON stays JSON.
func TestFieldCuts(t *testing.T) {
	s := NewSensitive()
	s.Add("hunter22-secret")
	red := Redactor{Sensitive: s}
	big := strings.Repeat("x", 12<<20)
	mark := fmt.Sprintf("... (%d bytes, cut)", len(big))
	for name, got := range map[string]string{
		"Text":      red.Text(big),
		"TextLines": red.TextLines(big),
		"Field":     red.Field(big, JSONString),
	} {
		if len(got) != MaxField+len(mark) || !strings.HasSuffix(got, mark) {
			t.Errorf("%s: %d bytes, ends %q", name, len(got), got[max(0, len(got)-40):])
		}
	}
	line := red.JSONLine(map[string]any{"error": big, "response": map[string]any{"volume_id": big[:1<<20]}})
	var rec map[string]any
	if err := json.Unmarshal(line, &rec); err != nil || len(line) > 3*MaxField {
		t.Errorf("JSONLine: %d bytes, %v", len(line), err)
	}
	// A secret across the cut: 4090 bytes, then the secret.
	across := strings.Repeat("y", MaxField-6) + "hunter22-secret" + big
	if got := red.Text(across); strings.Contains(got, "hunt") || !strings.Contains(got, "***") {
		t.Errorf("the secret across the cut shows: %q", got[MaxField-20:])
	}
	// Many long lines: each cut, the whole bounded, its length said.
	many := strings.Repeat(strings.Repeat("z", 10<<10)+"\n", 1000)
	got := red.TextLines(many)
	if len(got) > MaxText+MaxField+200 || !strings.HasSuffix(got, fmt.Sprintf("(%d bytes, cut)", len(many))) ||
		!strings.Contains(got, fmt.Sprintf("... (%d bytes, cut)\n", 10<<10)) {
		t.Errorf("TextLines of 1000 lines of 10 KiB: %d bytes, ends %q", len(got), got[len(got)-60:])
	}
	// Multi-byte characters are not cut in half.
	if got := Cut(strings.Repeat("é", 3000), 4097); !strings.HasPrefix(got, strings.Repeat("é", 2048)+"...") {
		t.Errorf("Cut through a character: %q", got[4090:4100])
	}
	hinted := big + " hint: run cleanup"
	if got := CutKeepEnd(hinted, 1000, 100); len(got) > 1100 || !strings.HasSuffix(got, " hint: run cleanup") || !strings.Contains(got, fmt.Sprintf("(%d bytes, cut)", len(hinted))) {
		t.Errorf("CutKeepEnd = %d bytes, %q", len(got), got[len(got)-80:])
	}
}

// TestWriterCutsLines: a text printer's line (its words and fields) is
// cut to MaxLine, whatever a caller forgot.
func TestWriterCutsLines(t *testing.T) {
	var b strings.Builder
	w := Redactor{}.Writer(&b)
	fmt.Fprintf(w, "error: %s\nnext\n", strings.Repeat("e", 1<<20))
	if b.Len() > MaxLine+100 || !strings.HasSuffix(b.String(), "bytes, cut)\nnext\n") {
		t.Errorf("Writer: %d bytes, ends %q", b.Len(), b.String()[b.Len()-40:])
	}
}
