package csiclient

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Output a driver controls is data: its error messages, names, versions,
// node IDs and handles reach a terminal, a CI log and JUnit XML, where an
// ESC or BEL byte could set the window title, clear the screen or hide
// lines, a CR overwrite a line, and a bidi control reorder what is read.
// Printable is the one escaping function every output uses.

// Printable returns s with everything a terminal or a reader would act on
// escaped as text: C0 controls (ESC, BEL, CR, LF, TAB, ...) and bytes that
// are not UTF-8 as \xNN; DEL, the C1 controls and the Unicode bidi
// controls as \uNNNN (which JSON reads back as the same character).
// Backslashes stay as they are, so escaping twice changes nothing.
func Printable(s string) string { return escape(s, false) }

// PrintableLines is Printable keeping line breaks and tabs, for text that
// is several lines on purpose (a report, a JUnit failure's text).
func PrintableLines(s string) string { return escape(s, true) }

func escape(s string, keepLines bool) string {
	if clean(s, keepLines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean tells, without allocating, whether s needs no escaping.
func clean(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 || c == 0x7f) && !(keepLines && (c == '\n' || c == '\t')) {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || unsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

// unsafeRune: DEL and the C1 controls, and the bidi controls that reorder text
// ("Trojan source"), line and paragraph separators.
func unsafeRune(r rune) bool {
	return (r >= 0x7f && r <= 0x9f) || r == 0x061c || r == 0x200e || r == 0x200f ||
		(r >= 0x2028 && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// safeWriter escapes what goes through it (keeping line breaks) and
// replaces the run's sensitive values, so that whatever a printer writes,
// its own lines or a driver's text inside them, reaches the terminal as
// data.
type safeWriter struct {
	w     io.Writer
	scrub func(string) string
}

func (s safeWriter) Write(p []byte) (int, error) {
	out := string(p)
	if s.scrub != nil {
		out = s.scrub(out)
	}
	out = PrintableLines(out)
	if _, err := io.WriteString(s.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}
