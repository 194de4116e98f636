package csiclient

import (
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

// Sensitive is the set of secret values a run handed the driver: every
// value of a csi_secret field and of a secrets map, collected from the
// requests as they are made (it is a Sink; add it to a trace before the
// printers). Scrub replaces them, and every token (JWT), wherever they
// appear in text the driver controls: a driver that echoes its request in
// an error must not print what the trace redacts.
type Sensitive struct {
	mu   sync.RWMutex
	repl map[string]string // a form of a value -> its marker
	r    *strings.Replacer // nil: to be built from repl
}

// NewSensitive returns an empty set.
func NewSensitive() *Sensitive { return &Sensitive{repl: map[string]string{}} }

// Call collects the secret values of a call's request.
func (s *Sensitive) Call(c Call) {
	if c.Request == nil {
		return
	}
	walkSecrets(c.Request.ProtoReflect(), false, func(key, val string, secret bool) string {
		if secret || key == TokensKey {
			s.Add(val)
		}
		return val
	})
}

// Step is nothing to collect.
func (s *Sensitive) Step(Step) {}

// Add records a secret value, in the forms it can take in a message: as
// is, JSON-escaped, Go-quoted and escaped by Printable.
func (s *Sensitive) Add(val string) {
	if len(val) < MinSensitiveLen {
		return
	}
	forms := []string{val, Printable(val), strings.Trim(strconv.Quote(val), `"`)}
	if b, err := json.Marshal(val); err == nil {
		forms = append(forms, strings.Trim(string(b), `"`))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range forms {
		if _, ok := s.repl[f]; !ok {
			s.repl[f] = Stripped
			s.r = nil
		}
	}
}

// Scrub returns text with every collected secret replaced by Stripped and
// every token by its fingerprint. A nil set scrubs tokens only.
func (s *Sensitive) Scrub(text string) string {
	if s != nil {
		if r := s.replacer(); r != nil {
			text = r.Replace(text)
		}
	}
	if strings.Contains(text, "eyJ") {
		text = jwtPattern.ReplaceAllStringFunc(text, TokenFingerprint)
	}
	return text
}

// replacer builds the replacer once per change of the set: the longest
// values first, so that a secret that contains another is replaced
// whole.
func (s *Sensitive) replacer() *strings.Replacer {
	s.mu.RLock()
	r, n := s.r, len(s.repl)
	s.mu.RUnlock()
	if r != nil || n == 0 {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r != nil {
		return s.r
	}
	keys := make([]string, 0, len(s.repl))
	for k := range s.repl {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, k, s.repl[k])
	}
	s.r = strings.NewReplacer(pairs...)
	return s.r
}
