package csiclient

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TokensKey is where the kubelet puts service-account tokens, in
// volume_context or (serviceAccountTokenInSecrets) in secrets.
const TokensKey = "csi.storage.k8s.io/serviceAccount.tokens"

// Stripped replaces a secret value in printed output.
const Stripped = "***stripped***"

// Redactor turns requests and responses into the JSON the trace prints.
//
// protosanitizer (csi-lib-utils) replaces a whole secrets map with one
// string; a person debugging a driver needs to see which keys were sent, so
// this keeps the keys and strips the values, using the same csi_secret field
// option to find secret fields. Tokens keep their audience and expiry and
// show a short fingerprint, so two tokens can be told apart.
//
// With Sensitive, the text a driver controls (its errors, the fields of its
// answers) has the run's secret values and tokens replaced as well (Text,
// Scrub, JSONLine), and every output escapes control characters
// (Printable).
type Redactor struct {
	ShowSecrets bool
	Sensitive   *Sensitive
}

// Scrub replaces the run's secrets and tokens in text, unless ShowSecrets.
func (r Redactor) Scrub(text string) string {
	if r.ShowSecrets {
		return text
	}
	return r.Sensitive.Scrub(text)
}

// EscapeOnly is the Redactor for text that was scrubbed already (the
// records of -o json, rendered by a template): Field only cuts and
// escapes.
func EscapeOnly() Redactor { return Redactor{ShowSecrets: true} }

// Form is how Field prints a string.
type Form int

const (
	// OneLine: a field of a line (a driver's error, name, version, a
	// volume handle): cut to MaxField, every control escaped, line
	// breaks included.
	OneLine Form = iota
	// Lines: a text of several lines on purpose (a JUnit failure's
	// text, system-out): each line cut to MaxField, the whole to
	// MaxText; line breaks and tabs kept, other controls escaped.
	Lines
	// JSONString: a string of a JSON record, cut as Lines; not escaped,
	// as encoding/json escapes the C0 controls and JSONLine the others.
	JSONString
)

// Field is the one function every printed string a driver (or a cluster,
// or an input file) controls goes through, in every output: the run's
// secrets and tokens replaced in each of their forms (Scrub), then cut
// (Cut) so that a driver's 12 MB error prints as a few KiB saying its
// length, then escaped (Printable) so that no control reaches a terminal.
// It scrubs before it cuts, so that a secret the cut runs through is
// stripped whole; what lies further than scrubSlack beyond the cut is not
// looked at.
func (r Redactor) Field(s string, f Form) string {
	if f == OneLine {
		return Printable(r.scrubCut(s, MaxField))
	}
	s = r.scrubLines(s)
	if f == JSONString {
		return s
	}
	return PrintableLines(s)
}

// Short is Field for one line cut to max bytes (at most MaxField): a
// tooltip's error.
func (r Redactor) Short(s string, max int) string {
	return Printable(r.scrubCut(s, min(max, MaxField)))
}

// scrubCut scrubs s and cuts it to max bytes.
func (r Redactor) scrubCut(s string, max int) string {
	n := len(s)
	if n <= max {
		return r.Scrub(s)
	}
	return cut(r.Scrub(s[:min(n, max+scrubSlack)]), max) + cutMark(n)
}

// scrubLines scrubs s and cuts each line to MaxField, s to MaxText.
// Each line is scrubbed on its own (with its length, before its cut),
// then the text whole, for a secret a line break splits.
func (r Redactor) scrubLines(s string) string {
	if len(s) <= MaxField {
		return r.Scrub(s)
	}
	var b strings.Builder
	for rest := s; rest != ""; {
		if b.Len() > MaxText {
			b.WriteString(cutMark(len(s)))
			break
		}
		line, after, found := strings.Cut(rest, "\n")
		b.WriteString(r.scrubCut(line, MaxField))
		if found {
			b.WriteByte('\n')
		}
		rest = after
	}
	return r.Scrub(b.String())
}

// Text is a driver's one-line text as it may be printed: Field, OneLine.
func (r Redactor) Text(text string) string { return r.Field(text, OneLine) }

// TextLines is Field for text of several lines (line breaks kept).
func (r Redactor) TextLines(text string) string { return r.Field(text, Lines) }

// Writer wraps w so that everything written through it is scrubbed and
// escaped (line breaks kept), each line cut to MaxLine: for printers of
// text, whose own lines hold fields that went through Field.
func (r Redactor) Writer(w io.Writer) io.Writer {
	if sw, ok := w.(safeWriter); ok {
		w = sw.w
	}
	return safeWriter{w: w, scrub: r.Scrub}
}

// JSONLine encodes v as one line of JSON without HTML escaping; each
// string in it, and each key, went through Field (JSONString): scrubbed
// and cut. encoding/json escapes the C0 controls and replaces bytes that
// are not UTF-8; the C1 and bidi controls it leaves are escaped as \u
// sequences, which JSON reads back as the same text.
func (r Redactor) JSONLine(v any) []byte {
	b := marshalNoEscape(v)
	if s := string(b); len(s) > MaxField || r.Scrub(s) != s {
		var tree any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if dec.Decode(&tree) == nil {
			b = marshalNoEscape(r.fieldTree(tree, JSONString))
		}
	}
	return []byte(PrintableLines(string(b)))
}

// FieldTree applies Field to every string and key of a decoded JSON
// value (the record a template renders).
func (r Redactor) FieldTree(v any, f Form) any { return r.fieldTree(v, f) }

func (r Redactor) fieldTree(v any, f Form) any {
	switch x := v.(type) {
	case string:
		return r.Field(x, f)
	case []any:
		for i := range x {
			x[i] = r.fieldTree(x[i], f)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[r.Field(k, f)] = r.fieldTree(val, f)
		}
		return out
	}
	return v
}

// JSON returns m as compact protojson with proto field names and sorted keys,
// redacted unless ShowSecrets.
func (r Redactor) JSON(m proto.Message) json.RawMessage {
	if m == nil {
		return nil
	}
	if !r.ShowSecrets {
		m = proto.Clone(m)
		redactMessage(m.ProtoReflect())
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
		return b
	}
	// protojson varies its whitespace on purpose; re-encode for stable,
	// sorted, compact lines that CI can diff.
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	return marshalNoEscape(v)
}

// marshalNoEscape is json.Marshal without HTML escaping, so that "<" and
// "&" in paths and fingerprints print as themselves.
func marshalNoEscape(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`{"marshal_error":` + strconv.Quote(err.Error()) + `}`)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func redactMessage(m protoreflect.Message) {
	walkSecrets(m, true, redactValue)
}

// walkSecrets calls visit for every value redaction looks at in m and its
// messages: each string value of a string map (with its key, and whether
// the map is a csi_secret field) and each csi_secret string field (key
// ""). With set, the value visit returns replaces the one in m.
func walkSecrets(m protoreflect.Message, set bool, visit func(key, val string, secret bool) string) {
	walk(m, set, visit, func(md protoreflect.MessageDescriptor) secretFields {
		info := infoOf(md)
		return secretFields{relevant: info.relevant, isSecret: info.isSecret}
	})
}

// secretFields is what redaction asks of a message type: whether anything
// of it (or below it) can hold a secret, and which of its fields do.
type secretFields struct {
	relevant bool
	isSecret func(protoreflect.FieldDescriptor) bool
}

// walk is walkSecrets with the per-type facts given by fields, so that
// the benchmark can compare the cached facts with a lookup per field.
func walk(m protoreflect.Message, set bool, visit func(key, val string, secret bool) string, fields func(protoreflect.MessageDescriptor) secretFields) {
	info := fields(m.Descriptor())
	if !info.relevant {
		return // nothing of this type or below it can hold a secret
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		secret := info.isSecret(fd)
		switch {
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind:
			mv := v.Map()
			mv.Range(func(k protoreflect.MapKey, val protoreflect.Value) bool {
				out := visit(k.String(), val.String(), secret)
				if set {
					mv.Set(k, protoreflect.ValueOfString(out))
				}
				return true
			})
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			l := v.List()
			for i := range l.Len() {
				walk(l.Get(i).Message(), set, visit, fields)
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			walk(v.Message(), set, visit, fields)
		case fd.Kind() == protoreflect.StringKind && secret:
			out := visit("", v.String(), true)
			if set {
				m.Set(fd, protoreflect.ValueOfString(out))
			}
		}
		return true
	})
}

// msgInfo is what redaction needs of a message type: which of its fields
// carry the csi_secret option. Reading a field option is an extension
// lookup (a map access and an interface conversion); a request's fields
// are walked for every call printed and every call collected (Sensitive),
// so it is worked out once per message type.
type msgInfo struct {
	secret []bool // by field index
	// relevant: the type or one below it has a string map or a secret
	// field; a walk skips the others (a volume capability, topology).
	relevant bool
}

func (i *msgInfo) isSecret(fd protoreflect.FieldDescriptor) bool {
	if fd.IsExtension() || fd.Index() >= len(i.secret) {
		return isSecretField(fd)
	}
	return i.secret[fd.Index()]
}

// msgInfos caches msgInfo by message descriptor. It is package state on
// purpose: it holds facts of the compiled CSI descriptors, which never
// change, as protobuf's own registries do.
var msgInfos sync.Map

func infoOf(md protoreflect.MessageDescriptor) *msgInfo {
	if v, ok := msgInfos.Load(md); ok {
		return v.(*msgInfo)
	}
	v, _ := msgInfos.LoadOrStore(md, newMsgInfo(md, map[protoreflect.FullName]bool{}))
	return v.(*msgInfo)
}

// newMsgInfo works out a type's msgInfo; seen guards against recursive
// types (counted as relevant).
func newMsgInfo(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) *msgInfo {
	seen[md.FullName()] = true
	fields := md.Fields()
	info := &msgInfo{secret: make([]bool, fields.Len())}
	for i := range fields.Len() {
		fd := fields.Get(i)
		info.secret[i] = isSecretField(fd)
		switch {
		case info.secret[i]:
			info.relevant = true
		case fd.IsMap():
			info.relevant = info.relevant || fd.MapValue().Kind() == protoreflect.StringKind
		case fd.Kind() == protoreflect.MessageKind:
			child := fd.Message()
			info.relevant = info.relevant || seen[child.FullName()] || newMsgInfo(child, seen).relevant
		}
	}
	return info
}

func isSecretField(fd protoreflect.FieldDescriptor) bool {
	b, _ := proto.GetExtension(fd.Options(), csi.E_CsiSecret).(bool)
	return b
}

var jwtPattern = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// redactValue hides a map value: the tokens key keeps its shape, secret
// fields are stripped, and anything that looks like a JWT elsewhere (a
// driver's own volume attribute, say) is replaced by its fingerprint.
func redactValue(key, val string, secret bool) string {
	if key == TokensKey {
		if s, ok := RedactTokens(val); ok {
			return s
		}
		return Stripped
	}
	if secret {
		return Stripped
	}
	return jwtPattern.ReplaceAllStringFunc(val, TokenFingerprint)
}

// TokenFingerprint is what the trace shows instead of a token: enough to
// tell two tokens apart, nothing that could be replayed.
func TokenFingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "<token sha256:" + hex.EncodeToString(sum[:4]) + ">"
}

// RedactTokens rewrites the kubelet's tokens JSON with each token replaced
// by its fingerprint; audiences and expiry stay, in the kubelet's key order
// (audiences sorted, then token and expirationTimestamp), so the shape is the
// one the driver saw.
func RedactTokens(val string) (string, bool) {
	var m map[string]struct {
		Token               string          `json:"token"`
		ExpirationTimestamp json.RawMessage `json:"expirationTimestamp"`
	}
	if err := json.Unmarshal([]byte(val), &m); err != nil {
		return "", false
	}
	for k, v := range m {
		v.Token = TokenFingerprint(v.Token)
		m[k] = v
	}
	return string(marshalNoEscape(m)), true
}
