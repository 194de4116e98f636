package csiclient

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MinSensitiveLen is the shortest secret value searched for in free text
// (a driver's error message, a response field). A secret's own field is
// always stripped; but a value of one to three characters ("1", "no")
// would turn every such substring of every message into the marker and
// leave nothing readable, and tells little to whoever reads it.
const MinSensitiveLen = 4

// Sensitive is the set of secret values a run hands the driver: every
// value of a csi_secret field and of a secrets map, collected from the
// requests as they are made (it is a Sink; add it to a trace before the
// printers), and the input's Secrets, added before the first call (Add).
// Scrub replaces them, and every token (JWT), wherever they appear in text
// the driver controls: a driver that echoes its request in an error, or
// puts a secret in its vendor_version, must not print what the trace
// redacts.
//
// A value is searched for in the forms a driver can echo it in: as is,
// quoted (JSON, Go, Printable), in upper and lower case, as hex (both
// cases), as base64 and base64url (padded or not, and inside a longer
// base64 text at each of its three alignments), and split by line
// breaks (a real one or an escaped "\n").
type Sensitive struct {
	mu    sync.RWMutex
	forms map[string]struct{} // every form of every value
	size  int                 // the forms' bytes
	built *scrubber           // nil: to be built from forms
}

// scrubber is what Scrub runs, built once per change of the set.
type scrubber struct {
	r *strings.Replacer
	// find is r with every form replaced by nothing: run into a counter,
	// it tells without allocating whether a text holds any form.
	find *strings.Replacer
	// joined are the forms with their own line breaks removed, longest
	// first, searched for in a text whose line breaks are removed;
	// findJoined is find for them.
	joined     []string
	findJoined *strings.Replacer
}

// NewSensitive returns an empty set.
func NewSensitive() *Sensitive { return &Sensitive{forms: map[string]struct{}{}} }

// Call collects the secret values of a call's request.
func (s *Sensitive) Call(c Call) {
	if c.Request == nil {
		return
	}
	walkSecrets(c.Request.ProtoReflect(), false, func(key, val string, secret bool) string {
		if secret || key == TokensKey {
			s.Add(val)
		}
		if key == TokensKey {
			s.addTokens(val)
		}
		return val
	})
}

// addTokens adds each token of the kubelet's tokens JSON on its own, so
// that its encoded forms are found too (as is, the JWT pattern finds it).
func (s *Sensitive) addTokens(val string) {
	var m map[string]struct {
		Token string `json:"token"`
	}
	if json.Unmarshal([]byte(val), &m) != nil {
		return
	}
	for _, v := range m {
		s.add(v.Token, false)
	}
}

// Step is nothing to collect.
func (s *Sensitive) Step(Step) {}

// Add records a secret value in every form Scrub looks for.
func (s *Sensitive) Add(val string) { s.add(val, true) }

// add records val's encoded forms, and with plain its plain ones (a
// token's plain form is left to the JWT pattern, which keeps its
// fingerprint).
func (s *Sensitive) add(val string, plain bool) {
	if len(val) < MinSensitiveLen {
		return
	}
	forms := secretForms(val, plain)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.size > maxFormBytes {
		if !plain {
			return // a token: the JWT pattern finds it as is
		}
		forms = forms[:min(len(forms), plainForms)]
	}
	for _, f := range forms {
		if _, ok := s.forms[f]; !ok {
			s.forms[f] = struct{}{}
			s.size += len(f)
			s.built = nil
		}
	}
}

// maxFormBytes bounds the encoded forms a set searches for: a run that
// holds for days gets new tokens as they expire, and each brings its
// forms. Past it, a new value is searched for as is only (the first
// plainForms forms: as is, Printable, Go- and JSON-quoted).
const (
	maxFormBytes = 16 << 20
	plainForms   = 4
)

// secretForms are the texts that show val: with plain, as is, quoted
// and recased (the first plainForms are val as is and quoted); hex and
// base64 encoded. Forms shorter than MinSensitiveLen are left out.
func secretForms(val string, plain bool) []string {
	var forms []string
	add := func(f string) {
		if len(f) >= MinSensitiveLen {
			forms = append(forms, f)
		}
	}
	if plain {
		for _, v := range []string{val, strings.ToUpper(val), strings.ToLower(val)} {
			add(v)
			add(Printable(v))
			add(strings.Trim(strconv.Quote(v), `"`))
			if b, err := json.Marshal(v); err == nil {
				add(strings.Trim(string(b), `"`))
			}
		}
	}
	h := hex.EncodeToString([]byte(val))
	add(h)
	add(strings.ToUpper(h))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		add(enc.EncodeToString([]byte(val)))
		raw := enc.WithPadding(base64.NoPadding)
		add(raw.EncodeToString([]byte(val)))
		for lead := range 3 {
			add(base64Core(raw, val, lead))
		}
	}
	return forms
}

// base64Core is the part of the base64 of a longer text that val alone
// decides when lead bytes of that text come before it: the characters
// that also hold bits of the bytes before or after it are cut off.
// Each character holds 6 bits; val's bits are [8*lead, 8*(lead+len)).
func base64Core(raw *base64.Encoding, val string, lead int) string {
	b := make([]byte, lead+len(val))
	copy(b[lead:], val)
	enc := raw.EncodeToString(b)
	first := (8*lead + 5) / 6
	end := 8 * len(b) / 6
	if end <= first {
		return ""
	}
	return enc[first:end]
}

// Scrub returns text with every collected secret, in each of its forms,
// replaced by Stripped and every token by its fingerprint. A nil set
// scrubs tokens only.
func (s *Sensitive) Scrub(text string) string {
	if s != nil {
		if sc := s.scrubber(); sc != nil {
			if innerBreak(text) {
				text = sc.scrubSplit(text)
			} else if sc.holds(text) {
				text = sc.r.Replace(text)
			}
		}
	}
	if strings.Contains(text, "eyJ") {
		text = jwtPattern.ReplaceAllStringFunc(text, TokenFingerprint)
	}
	return text
}

// scrubber builds the replacer once per change of the set: the longest
// forms first, so that a secret that contains another is replaced whole.
func (s *Sensitive) scrubber() *scrubber {
	s.mu.RLock()
	sc, n := s.built, len(s.forms)
	s.mu.RUnlock()
	if sc != nil || n == 0 {
		return sc
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built != nil {
		return s.built
	}
	keys := make([]string, 0, len(s.forms))
	for k := range s.forms {
		keys = append(keys, k)
	}
	longestFirst := func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	}
	slices.SortFunc(keys, longestFirst)
	pairs := make([]string, 0, 2*len(keys))
	empty := make([]string, 0, 2*len(keys))
	seen := map[string]bool{}
	var joined []string
	for _, k := range keys {
		pairs = append(pairs, k, Stripped)
		empty = append(empty, k, "")
		j, _ := unbroken(k, false)
		if len(j) >= MinSensitiveLen && !seen[j] {
			seen[j] = true
			joined = append(joined, j)
		}
	}
	slices.SortFunc(joined, longestFirst)
	emptyJoined := make([]string, 0, 2*len(joined))
	for _, j := range joined {
		emptyJoined = append(emptyJoined, j, "")
	}
	s.built = &scrubber{r: strings.NewReplacer(pairs...), find: strings.NewReplacer(empty...),
		joined: joined, findJoined: strings.NewReplacer(emptyJoined...)}
	return s.built
}

// holds tells whether text holds a form of a secret.
func (sc *scrubber) holds(text string) bool { return holds(sc.find, text) }

// holds tells whether find, which replaces what it finds by nothing,
// finds something in text.
func holds(find *strings.Replacer, text string) bool {
	var c counter
	_, _ = find.WriteString(&c, text)
	return int(c) != len(text)
}

// counter counts what is written to it.
type counter int

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }

func (c *counter) WriteString(s string) (int, error) { *c += counter(len(s)); return len(s), nil }

// lineBreaks are what a driver's text can split a secret with: a line
// break, or one escaped as JSON, Go and Printable write it (and JSON in
// JSON). Longest first: they are matched in this order.
var lineBreaks = []string{`\\r\\n`, `\u000d\u000a`, `\x0d\x0a`, `\\n`, `\\r`, `\u000a`, `\u000d`, `\x0a`, `\x0d`, `\r\n`, `\n`, `\r`, "\r\n", "\n", "\r"}

// breakStarts are the bytes a line break starts with.
const breakStarts = "\n\r\\"

// breakAt is the length of the line break at the start of s, or 0.
func breakAt(s string) int {
	if s == "" || (s[0] != '\n' && s[0] != '\r' && s[0] != '\\') {
		return 0
	}
	for _, b := range lineBreaks {
		if strings.HasPrefix(s, b) {
			return len(b)
		}
	}
	return 0
}

// innerBreak tells whether text has a line break with text after it (a
// break at the end, as every printed line has, splits nothing).
func innerBreak(text string) bool {
	for i := 0; i < len(text); i++ {
		j := strings.IndexAny(text[i:], breakStarts)
		if j < 0 {
			return false
		}
		i += j
		if n := breakAt(text[i:]); n > 0 {
			for j := i + n; j < len(text); {
				m := breakAt(text[j:])
				if m == 0 {
					return true
				}
				j += m
			}
			return false
		}
	}
	return false
}

// unbroken is text without its line breaks, and with index for each
// byte of it the index of the byte in text.
func unbroken(text string, index bool) (string, []int32) {
	var b strings.Builder
	b.Grow(len(text))
	var idx []int32
	if index {
		idx = make([]int32, 0, len(text))
	}
	for i := 0; i < len(text); {
		if n := breakAt(text[i:]); n > 0 {
			i += n
			continue
		}
		// Up to the next byte a break can start with, in one piece.
		j := strings.IndexAny(text[i+1:], breakStarts)
		if j < 0 {
			j = len(text) - i - 1
		}
		end := i + 1 + j
		b.WriteString(text[i:end])
		if index {
			for k := i; k < end; k++ {
				idx = append(idx, int32(k))
			}
		}
		i = end
	}
	return b.String(), idx
}

// scrubSplit replaces the secrets in a text of several lines, whole or
// split by line breaks: it looks for them in the text without its
// breaks, and strips the whole stretch of the text (breaks included)
// each one covers.
func (sc *scrubber) scrubSplit(text string) string {
	if joined, _ := unbroken(text, false); !holds(sc.findJoined, joined) {
		return text // the common case: no secret, however split
	}
	joined, idx := unbroken(text, true)
	type span struct{ from, to int }
	var spans []span
	for _, f := range sc.joined {
		for off := 0; ; {
			i := strings.Index(joined[off:], f)
			if i < 0 {
				break
			}
			i += off
			spans = append(spans, span{int(idx[i]), int(idx[i+len(f)-1]) + 1})
			off = i + len(f)
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	var out strings.Builder
	out.Grow(len(text))
	at := 0
	for _, sp := range spans {
		if sp.to <= at {
			continue // inside one already stripped
		}
		if sp.from < at {
			sp.from = at // overlaps the one before: strip the rest
		} else {
			out.WriteString(text[at:sp.from])
			out.WriteString(Stripped)
		}
		at = sp.to
	}
	out.WriteString(text[at:])
	return out.String()
}
