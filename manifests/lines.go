package manifests

import (
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// lineIndex finds the line of a field in one document, so that a problem
// names the line to edit, not only the document.
type lineIndex struct {
	root  *yaml3.Node // the document's top mapping; nil when it does not parse
	start int         // the file line the document starts on
}

func newLineIndex(raw []byte, start int) *lineIndex {
	var doc yaml3.Node
	li := &lineIndex{start: start}
	if yaml3.Unmarshal(raw, &doc) == nil && len(doc.Content) == 1 {
		li.root = doc.Content[0]
	}
	return li
}

// sub is the index of the node at path (a List's items[i]), whose lines
// are still the file's.
func (li *lineIndex) sub(path string) *lineIndex {
	if li == nil || li.root == nil {
		return li
	}
	n := li.root
	for _, seg := range splitPath(path) {
		if n, _ = child(n, seg); n == nil {
			return &lineIndex{start: li.start}
		}
	}
	return &lineIndex{root: n, start: li.start}
}

// line is the file line of a field path such as spec.volumes[1].csi.driver
// (the key's line), or of the deepest part of it present in the document
// (a missing field is reported where it belongs); the document's first
// line when nothing matches.
func (li *lineIndex) line(path string) int {
	if li == nil {
		return 0
	}
	n := li.root
	if n == nil {
		return li.start
	}
	best := n.Line
	for _, seg := range splitPath(path) {
		next, keyLine := child(n, seg)
		if next == nil {
			break
		}
		n, best = next, keyLine
	}
	return li.start + best - 1
}

// child is the value under a mapping key or a sequence index, and the line
// that names it.
func child(n *yaml3.Node, seg string) (*yaml3.Node, int) {
	for n.Kind == yaml3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i+1], n.Content[i].Line
			}
		}
	case yaml3.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], n.Content[i].Line
		}
	}
	return nil, 0
}

// splitPath splits a field path into keys and indices:
// spec.volumes[1].csi -> spec, volumes, 1, csi. Keys in brackets
// (metadata.labels[a.b]) are kept whole.
func splitPath(path string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '.':
			flush()
		case '[':
			flush()
			j := strings.IndexByte(path[i:], ']')
			if j < 0 {
				return out
			}
			out = append(out, strings.Trim(path[i+1:i+j], `"`))
			i += j
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// fieldPathOf is the field path a validation message starts with
// ("spec.csi.driver: Required value" -> "spec.csi.driver").
func fieldPathOf(msg string) string {
	if i := strings.Index(msg, ": "); i > 0 && !strings.ContainsAny(msg[:i], " \"") {
		return msg[:i]
	}
	return ""
}
