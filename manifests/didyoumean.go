package manifests

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// strictFieldRE parses sigs.k8s.io/json's strict decoding errors:
// unknown field "spec.podInfoOnMout", duplicate field "metadata.name".
var strictFieldRE = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)

// fieldProblem is one strict-decoding error with the path it names and,
// for an unknown field, the known field it most likely meant.
type fieldProblem struct {
	path    string
	message string
}

// strictProblems words each strict-decoding error of obj, an unknown field
// with a did-you-mean when a known field of the same object is close.
func strictProblems(errs []error, obj any) []fieldProblem {
	out := make([]fieldProblem, 0, len(errs))
	for _, e := range errs {
		m := strictFieldRE.FindStringSubmatch(e.Error())
		if m == nil {
			out = append(out, fieldProblem{message: e.Error()})
			continue
		}
		// The API server's wording, then the hint.
		p := fieldProblem{path: m[2], message: e.Error()}
		if m[1] == "unknown" {
			parent, name := splitLast(m[2])
			if s := suggest(name, knownFields(reflect.TypeOf(obj), splitPath(parent))); s != "" {
				p.message += " (did you mean " + strconv.Quote(strings.TrimPrefix(parent+"."+s, ".")) + "?)"
			}
		}
		out = append(out, p)
	}
	return out
}

func splitLast(path string) (parent, name string) {
	segs := splitPath(path)
	if len(segs) == 0 {
		return "", path
	}
	name = segs[len(segs)-1]
	if i := strings.LastIndex(path, "."+name); i >= 0 && i+len(name)+1 == len(path) {
		return path[:i], name
	}
	return "", path
}

// knownFields lists the JSON field names of the object at a path of t
// (index and map-key segments step into the element type).
func knownFields(t reflect.Type, path []string) []string {
	for _, seg := range path {
		t = deref(t)
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			f, ok := fieldByJSON(t, seg)
			if !ok {
				return nil
			}
			t = f
		default:
			return nil
		}
	}
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	eachJSONField(t, func(name string, _ reflect.Type) bool {
		names = append(names, name)
		return true
	})
	return names
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func fieldByJSON(t reflect.Type, name string) (reflect.Type, bool) {
	var found reflect.Type
	eachJSONField(t, func(n string, ft reflect.Type) bool {
		if n == name {
			found = ft
			return false
		}
		return true
	})
	return found, found != nil
}

// eachJSONField calls fn with every JSON field name of a struct, inlined
// (embedded) structs' fields included, until fn returns false.
func eachJSONField(t reflect.Type, fn func(string, reflect.Type) bool) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		_ = opts // ",inline" or nothing: an embedded struct's fields are its parent's
		if f.Anonymous && name == "" {
			if ft := deref(f.Type); ft.Kind() == reflect.Struct && !eachJSONField(ft, fn) {
				return false
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if !fn(name, f.Type) {
			return false
		}
	}
	return true
}

// suggest is the known name closest to name by edit distance, ignoring
// case, when close enough to be a typo: at most a third of the name's
// length, and at least one edit allowed; else a known name that starts
// with it.
func suggest(name string, known []string) string {
	best, bestD := "", -1
	limit := max(1, len(name)/3)
	for _, k := range known {
		d := editDistance(strings.ToLower(name), strings.ToLower(k))
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = k, d
		}
	}
	if best != "" || len(name) < 4 {
		return best
	}
	// A name cut short (expiration for expirationSeconds).
	for _, k := range known {
		if strings.HasPrefix(strings.ToLower(k), strings.ToLower(name)) {
			return k
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of two strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// DidYouMean is the hint for a name (a driver's, a class's) that matches
// none of the known ones: ` (did you mean "x"?)` when one is a typo of it,
// else "". A typo here is at most two edits: driver names share long
// suffixes (.csi.k8s.io), so a third of the name would pair different
// drivers.
func DidYouMean(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d > 0 && d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + strconv.Quote(best) + "?)"
}

// CSIDriverNames are the names of the CSIDriver objects, for DidYouMean.
func (c *Cluster) CSIDriverNames() []string {
	var names []string
	for _, d := range c.CSIDrivers() {
		names = append(names, d.Name)
	}
	return names
}

// Suggest is the known name a mistyped name most likely meant ("" when
// none is close), as the manifests' unknown fields are worded: for other
// strict readers (conformance's test driver definition).
func Suggest(name string, known []string) string { return suggest(name, known) }

// StrictFieldErrors words the strict-decoding errors of sigs.k8s.io/json's
// UnmarshalStrict into obj, an unknown field with a did-you-mean.
func StrictFieldErrors(errs []error, obj any) []string {
	out := make([]string, 0, len(errs))
	for _, p := range strictProblems(errs, obj) {
		out = append(out, p.message)
	}
	return out
}
