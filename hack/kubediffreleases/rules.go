package main

import (
	"fmt"
	"go/build/constraint"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// The files that decide which releases a change is checked against.
const kubediffDir = "e2e/kubeletdiff/"

// ruleFiles hold the release-dependent rules: every changed line of code
// must name the releases it is about (a minor: `Minor >= 36`, `33: beta`,
// 1.36), or every release is run.
var ruleFiles = map[string]bool{
	"node/release/version.go":  true,
	"node/release/features.go": true,
	"node/release/release.go":  true,
}

// selection is the set of chosen minors, each with why.
type selection struct {
	rels []release
	why  map[int]string
}

func newSelection(rels []release) *selection {
	return &selection{rels: rels, why: map[int]string{}}
}

// add chooses a minor if it is one of the releases (first reason kept).
func (s *selection) add(minor int, why string) {
	for _, r := range s.rels {
		if r.minor == minor {
			if _, ok := s.why[minor]; !ok {
				s.why[minor] = why
			}
		}
	}
}

func (s *selection) all(why string) {
	for _, r := range s.rels {
		s.add(r.minor, why)
	}
}

// around chooses a minor and its neighbours: a predicate's threshold N
// (`>= N`, `<= N`) changes what N-1, N or N+1 do.
func (s *selection) around(minor int, why string) {
	for m := minor - 1; m <= minor+1; m++ {
		s.add(m, why)
	}
}

func (s *selection) names() []string {
	var out []string
	for _, r := range s.rels {
		if _, ok := s.why[r.minor]; ok {
			out = append(out, r.name)
		}
	}
	return out
}

// applyRules adds what one changed file asks for. read gives a file's
// current content (for an adapter's build constraint).
func applyRules(s *selection, f fileDiff, read func(string) (string, bool)) {
	p := f.path
	switch {
	case ruleFiles[p]:
		strictLines(s, f, p)
	case strings.HasPrefix(p, kubediffDir):
		kubediffFile(s, f, read)
	case p == "Makefile":
		for _, l := range f.lines() {
			if makefileBuildLine.MatchString(l) {
				s.all("Makefile: the list of releases or how each one is built changed")
				return
			}
		}
	case p == "node/release/releases.txt":
		// A claimed release added or changed: the releases its lines name.
		mentionedLines(s, f, p)
	case p == "docs/kubelet.md", isProductGo(p):
		mentionedLines(s, f, p)
	}
}

// isProductGo: the simulator's own Go code (not tests, not e2e or hack).
func isProductGo(p string) bool {
	return strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") &&
		!strings.HasPrefix(p, "e2e/") && !strings.HasPrefix(p, "hack/")
}

func kubediffFile(s *selection, f fileDiff, read func(string) (string, bool)) {
	rel := strings.TrimPrefix(f.path, kubediffDir)
	base := path.Base(rel)
	switch {
	case rel == "go.mod" || rel == "go.sum":
		s.add(newestGA(s.rels).minor, f.path+": the default release's module file")
	case strings.HasPrefix(base, "go.v") && (strings.HasSuffix(base, ".mod") || strings.HasSuffix(base, ".sum")):
		name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(base, "go."), ".mod"), ".sum")
		for _, r := range s.rels {
			if r.name == name {
				s.add(r.minor, f.path+": its module file")
			}
		}
	case rel == "difftable/table.go":
		caseLines(s, f)
	case strings.HasPrefix(base, "adapt_") && strings.HasSuffix(base, "_test.go"):
		adapter(s, f, read)
	case strings.HasSuffix(base, ".md") || base == "genmod.sh":
		mentionedLines(s, f, f.path)
	default:
		s.all(f.path + ": the harness of every release")
	}
}

// adapter: the releases whose build of the harness compiles the file
// (its //go:build line over the before1_N tags the Makefile passes).
func adapter(s *selection, f fileDiff, read func(string) (string, bool)) {
	text, ok := read(f.path)
	if !ok { // deleted: its constraint is among the removed lines
		text = strings.Join(f.removed, "\n")
	}
	expr := buildConstraint(text)
	if expr == nil {
		s.all(f.path + ": an adapter without a build constraint")
		return
	}
	for _, r := range s.rels {
		if expr.Eval(tagsOf(r.minor)) {
			s.add(r.minor, fmt.Sprintf("%s: built for it (%s)", f.path, expr))
		}
	}
}

func buildConstraint(text string) constraint.Expr {
	for _, l := range strings.Split(text, "\n") {
		if constraint.IsGoBuild(l) {
			if e, err := constraint.Parse(l); err == nil {
				return e
			}
		}
	}
	return nil
}

// tagsOf mirrors the Makefile's KUBEDIFF_TAGS: before1_N for N above the
// release's minor, up to 40.
func tagsOf(minor int) func(string) bool {
	return func(tag string) bool {
		n, ok := strings.CutPrefix(tag, "before1_")
		if !ok {
			return tag == "linux" || tag == "unix"
		}
		v, err := strconv.Atoi(n)
		return err == nil && v > minor && v <= 40
	}
}

var (
	// A minor: 1.36 (also in v1.36.3, not in 11.36 or 1.361), a
	// comparison with Minor, a gate table's key (36: beta) or a step of
	// a gate's lifecycle (ga: 36).
	minorDotted = regexp.MustCompile(`1\.(\d{2})`)
	minorCode   = regexp.MustCompile(`\bMinor\s*(?:>=|<=|>|<|==|!=)\s*(\d{2})\b|\b(\d{2})\s*:|\b(?:alpha|beta|on|ga|locked|removed):\s*(\d{2})\b`)
	// The Makefile's lines that change which releases exist or how each
	// one's harness is built.
	makefileBuildLine = regexp.MustCompile(`^\s*KUBEDIFF_(RELEASES|TAGS|MINOR|MODFILE)\s*[:?+]?=`)
	caseBounds        = regexp.MustCompile(`\b(MinMinor|MaxMinor|StuckMaxMinor):\s*(\d+)`)
)

// minors are the release minors a line names.
func minors(line string) []int {
	var out []int
	for _, ix := range minorDotted.FindAllStringSubmatchIndex(line, -1) {
		before := ix[0] > 0 && isDigitOrDot(line[ix[0]-1])
		after := ix[1] < len(line) && line[ix[1]] >= '0' && line[ix[1]] <= '9'
		if !before && !after {
			n, _ := strconv.Atoi(line[ix[2]:ix[3]])
			out = append(out, n)
		}
	}
	for _, m := range minorCode.FindAllStringSubmatch(line, -1) {
		for _, g := range m[1:] {
			if n, err := strconv.Atoi(g); err == nil && n >= 20 {
				out = append(out, n)
			}
		}
	}
	return out
}

func isDigitOrDot(c byte) bool { return c == '.' || (c >= '0' && c <= '9') }

func isCommentOrBlank(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "//")
}

// strictLines: every changed line of code names its releases, or all run.
func strictLines(s *selection, f fileDiff, p string) {
	for _, l := range f.lines() {
		if isCommentOrBlank(l) {
			continue
		}
		ms := minors(l)
		if len(ms) == 0 {
			s.all(fmt.Sprintf("%s: a changed line names no release: %q", p, strings.TrimSpace(l)))
			return
		}
		for _, m := range ms {
			s.around(m, fmt.Sprintf("%s: a changed line names 1.%d", p, m))
		}
	}
}

// mentionedLines: only the releases changed lines name (docs, and product
// code beyond the rule files, which the oldest and newest already cover).
// In code a named minor may be a threshold, so its neighbours run too; a
// document's release section names the release itself.
func mentionedLines(s *selection, f fileDiff, p string) {
	isCode := strings.HasSuffix(p, ".go")
	for _, l := range f.lines() {
		for _, m := range minors(l) {
			why := fmt.Sprintf("%s: a changed line names 1.%d", p, m)
			if isCode {
				s.around(m, why)
			} else {
				s.add(m, why)
			}
		}
	}
}

// caseLines: a changed case runs in the releases its MinMinor..MaxMinor
// cover; a changed line of code without bounds is a case of every release.
func caseLines(s *selection, f fileDiff) {
	oldest, newest := s.rels[0].minor, s.rels[len(s.rels)-1].minor
	for _, l := range f.lines() {
		if isCommentOrBlank(l) {
			continue
		}
		bounds := caseBounds.FindAllStringSubmatch(l, -1)
		if len(bounds) == 0 {
			s.all(fmt.Sprintf("%s: a changed line of every release's cases: %q", f.path, strings.TrimSpace(l)))
			return
		}
		lo, hi := oldest, newest
		for _, b := range bounds {
			n, _ := strconv.Atoi(b[2])
			switch b[1] {
			case "MinMinor":
				lo = n
			case "MaxMinor":
				if n != 0 { // 0: the newest
					hi = n
				}
			case "StuckMaxMinor":
				s.around(n, f.path+": a case's StuckMaxMinor changed")
			}
		}
		for m := lo; m <= hi; m++ {
			s.add(m, fmt.Sprintf("%s: a changed case of 1.%d to 1.%d", f.path, lo, hi))
		}
	}
}
