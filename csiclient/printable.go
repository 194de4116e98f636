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

// MaxField is the most bytes of one string a driver controls (an error,
// a field of its answer, a volume handle) that any output prints: the
// rest is cut, and a marker says how long it was ("... (12582912 bytes,
// cut)"). The full text is printed nowhere.
const MaxField = 4 << 10

// MaxText bounds a text of several lines (a JUnit failure's text or
// system-out, a conformance message), each line cut to MaxField.
const MaxText = 64 << 10

// MaxLine bounds a line a text printer writes (Redactor.Writer): its own
// words and a few fields, each of at most MaxField.
const MaxLine = 4 * MaxField

// scrubSlack is how far beyond a cut a string is still scrubbed, so that
// a secret the cut runs through is stripped whole first.
const scrubSlack = 64 << 10

// cutMark is the marker after a cut text of n bytes.
func cutMark(n int) string { return fmt.Sprintf("... (%d bytes, cut)", n) }

// Cut returns s cut to at most max bytes at a character boundary,
// followed by cutMark, when it is longer.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return cut(s, max) + cutMark(len(s))
}

// CutKeepEnd is Cut keeping the last end bytes of s after the marker:
// for a message whose end (a hint) matters.
func CutKeepEnd(s string, max, end int) string {
	if len(s) <= max {
		return s
	}
	end = min(end, max)
	i := len(s) - end
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return cut(s, max-end) + cutMark(len(s)) + " ..." + s[i:]
}

// cut is s's first max bytes, ending on a character boundary.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && i > max-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

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

// cutEachLine cuts each line of s to max bytes.
func cutEachLine(s string, max int) string {
	if len(s) <= max {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if len(l) > max {
			nl := strings.HasSuffix(l, "\n")
			lines[i] = Cut(strings.TrimSuffix(l, "\n"), max)
			if nl {
				lines[i] += "\n"
			}
		}
	}
	return strings.Join(lines, "")
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
	out = PrintableLines(cutEachLine(out, MaxLine))
	if _, err := io.WriteString(s.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}
