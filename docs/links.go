package docs

import (
	_ "embed"
	"regexp"
	"strings"
	"sync"
)

// Repository is where the documents are published: the module path, as a
// URL. The one place the project's address is written for links.
const Repository = "https://github.com/csi-kubelet-sim/csi-kubelet-sim"

//go:embed kubelet.md
var kubeletMD string

var (
	anchorsOnce sync.Once
	anchors     map[string]string // section number -> heading anchor
	headingRE   = regexp.MustCompile(`^#{2,4} (\d+(?:\.\d+)*)\.? `)
	citationRE  = regexp.MustCompile(`docs/kubelet\.md §(\d+(?:\.\d+)*)`)
)

// loadAnchors reads the section headings once, the first time a link is
// made (never at start-up).
func loadAnchors() {
	anchors = map[string]string{}
	fence := false
	for _, line := range strings.Split(kubeletMD, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil && !fence {
			anchors[m[1]] = slug(strings.TrimLeft(line, "# "))
		}
	}
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped
// (but '-' and '_'), spaces as '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// SectionURL is the address of a section of docs/kubelet.md as published
// at ref (a release tag, or main for a build without one); "" for a
// section the document does not have.
func SectionURL(section, ref string) string {
	anchorsOnce.Do(loadAnchors)
	a, ok := anchors[section]
	if !ok {
		return ""
	}
	return Repository + "/blob/" + ref + "/docs/kubelet.md#" + a
}

// WithLinks follows every "docs/kubelet.md §N" of a message with the
// section's address, for a user who has the binary but not the file.
func WithLinks(msg, ref string) string {
	if !strings.Contains(msg, "docs/kubelet.md §") {
		return msg
	}
	return citationRE.ReplaceAllStringFunc(msg, func(c string) string {
		u := SectionURL(citationRE.FindStringSubmatch(c)[1], ref)
		if u == "" {
			return c
		}
		return c + " <" + u + ">"
	})
}
