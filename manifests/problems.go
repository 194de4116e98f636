package manifests

import (
	"errors"
	"fmt"
	"strings"
)

// InputError is a manifest the API server would refuse. It always names
// the file and document, and the line when it is known.
type InputError struct {
	Source Source
	Err    error
	// Object names the object ("Pod default/web") when it is known.
	Object string
}

func (e *InputError) Error() string { return fmt.Sprintf("%s: %s", e.Source, e.Message()) }

// Message is the problem without its source, on one line.
func (e *InputError) Message() string { return oneLine(e.Err.Error()) }

// Problems is every problem of an input, in the order read: a pre-flight
// reports them all at once rather than the first.
type Problems []error

func (p Problems) Error() string {
	msgs := make([]string, len(p))
	for i, e := range p {
		msgs[i] = e.Error()
	}
	return fmt.Sprintf("%d problems in the input:\n  %s", len(p), strings.Join(msgs, "\n  "))
}

func (p Problems) Unwrap() []error { return p }

// oneLine joins a multi-line message (the YAML decoder lists its errors on
// indented lines) into one line, so that every input error is one line.
func oneLine(msg string) string {
	if !strings.ContainsAny(msg, "\r\n") {
		return msg
	}
	var b strings.Builder
	for _, line := range strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' }) {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case b.Len() == 0:
		case strings.HasSuffix(b.String(), ":"):
			b.WriteString(" ")
		default:
			b.WriteString("; ")
		}
		b.WriteString(line)
	}
	return b.String()
}
func (e *InputError) Unwrap() error { return e.Err }

// inputError is a problem of the object at src, at the line of path.
func (l *Loader) inputError(src Source, object, path string, err error) *InputError {
	src.Line = l.Line(src, path)
	return &InputError{Source: src, Err: err, Object: object}
}

// typeErrorPath is the field path of a JSON type error ("json: cannot
// unmarshal string into Go struct field CSIDriverSpec.spec.attachRequired
// of type bool" -> spec.attachRequired).
func typeErrorPath(err error) string {
	msg := err.Error()
	const marker = "Go struct field "
	i := strings.Index(msg, marker)
	if i < 0 {
		return ""
	}
	rest := msg[i+len(marker):]
	if j := strings.Index(rest, " "); j >= 0 {
		rest = rest[:j]
	}
	if _, after, ok := strings.Cut(rest, "."); ok {
		return after
	}
	return ""
}

// WithReferences adds, to the problems of a Load that failed, every
// reference of what could be read that leads nowhere and that the kubelet
// would stop at, so that a command refusing its input shows all of it at
// once. Left out: references to objects refused for their own errors
// (already reported), and what only the API server's admission judges
// (the simulator does not run it). A clean input is left to the kubelet,
// which meets a missing object where a real one would.
func (l *Loader) WithReferences(c *Cluster, err error) error {
	if err == nil || c == nil {
		return err
	}
	var refs []Reference
	for _, r := range c.MissingReferences() {
		if !r.Admission && !l.refused[r.Target] {
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		return err
	}
	var all Problems
	if ps, ok := err.(Problems); ok {
		all = append(all, ps...)
	} else {
		all = append(all, err)
	}
	for _, r := range refs {
		src := r.Source
		src.Line = l.Line(r.Source, r.Path)
		all = append(all, &InputError{Source: src, Object: r.Object, Err: errors.New(r.Message)})
	}
	return all
}
