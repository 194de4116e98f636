// Package docs holds the project's documents; its tests keep what the code
// and the README say about them true: every "docs/kubelet.md §N.N" that a
// message, a comment or the README cites names a section that exists, and
// so does every section a conformance failure or scenario prints.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const rulesFile = "kubelet.md"

// heading is a numbered heading: "## 4. Service-account tokens" or
// "### 4.4 serviceAccountTokenInSecrets".
var heading = regexp.MustCompile(`(?m)^(#{2,4}) (\d+(?:\.\d+)*)\.? `)

// citation is a run of sections after the document's name, as messages
// write it: "docs/kubelet.md §4.4", "docs/kubelet.md §6.2, §6.3", "§4.2 and
// §4.3", possibly wrapped onto the next comment line.
var citation = regexp.MustCompile(`docs/kubelet\.md(?:(?:\s|//)*(?:,|/|and|or)?(?:\s|//)*§\d+(?:\.\d+)*)+`)

// mdRef is a Markdown document a file names ("e2e/kubeletdiff/README.md",
// "README.md"): a user can follow it only if the repository has it.
var mdRef = regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b`)

// sectionRef is one "§N.N" inside a citation, or anywhere in the document
// itself.
var sectionRef = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)

// sections returns the section numbers of a document in order.
func sections(text string) []string {
	var nums []string
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		nums = append(nums, m[2])
	}
	return nums
}

// checkNumbering reports duplicate sections, subsections outside their
// section, and sections out of order: the numbers are what users follow.
func checkNumbering(nums []string) []string {
	var problems []string
	seen := map[string]bool{}
	for i, n := range nums {
		if seen[n] {
			problems = append(problems, "section "+n+" appears twice")
		}
		seen[n] = true
		if parent, _, ok := cutLast(n); ok && !seen[parent] {
			problems = append(problems, "section "+n+" comes before or without its section "+parent)
		}
		if i > 0 && !less(nums[i-1], n) {
			problems = append(problems, "section "+n+" comes after "+nums[i-1])
		}
	}
	return problems
}

func cutLast(n string) (string, string, bool) {
	i := strings.LastIndex(n, ".")
	if i < 0 {
		return "", n, false
	}
	return n[:i], n[i+1:], true
}

// less orders section numbers part by part, numerically.
func less(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// badCitations returns "file:line: ..." for every cited section of text
// that is not in have. all: every "§N" counts (the document itself), not
// only those after "docs/kubelet.md".
func badCitations(name, text string, have map[string]bool, all bool) []string {
	var bad []string
	report := func(offset int, sec string) {
		if !have[sec] {
			line := 1 + strings.Count(text[:offset], "\n")
			bad = append(bad, name+":"+strconv.Itoa(line)+": docs/kubelet.md has no section §"+sec)
		}
	}
	if all {
		for _, m := range sectionRef.FindAllStringSubmatchIndex(text, -1) {
			report(m[2], text[m[2]:m[3]])
		}
		return bad
	}
	for _, c := range citation.FindAllStringIndex(text, -1) {
		run := text[c[0]:c[1]]
		for _, m := range sectionRef.FindAllStringSubmatchIndex(run, -1) {
			report(c[0]+m[2], run[m[2]:m[3]])
		}
	}
	return bad
}

// outsideRefs returns "file:line: ..." for every Markdown document a file
// names that the repository does not have, looked up from the file's own
// directory and from the repository's root (root is the repository as seen
// from this package).
func outsideRefs(root, name, text string) []string {
	var bad []string
	for _, m := range mdRef.FindAllStringIndex(text, -1) {
		ref := text[m[0]:m[1]]
		if inRepo(root, name, ref) {
			continue
		}
		line := 1 + strings.Count(text[:m[0]], "\n")
		bad = append(bad, name+":"+strconv.Itoa(line)+": "+ref+" is not in the repository; cite the repository's own files (docs/kubelet.md §N for the kubelet's rules)")
	}
	return bad
}

func inRepo(root, name, ref string) bool {
	for _, base := range []string{filepath.Join(root, filepath.Dir(name)), root} {
		p := filepath.Join(base, ref)
		if rel, err := filepath.Rel(root, p); err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// repoFiles lists the files that may cite the document: Go sources and
// Markdown of every module in the repository, and the Makefile, outside
// hidden directories, build output and vendored code.
func repoFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml", ".sh":
			files = append(files, path)
		default:
			if d.Name() == "Makefile" {
				files = append(files, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readRules(t *testing.T) (string, map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	have := map[string]bool{}
	for _, n := range sections(text) {
		have[n] = true
	}
	return text, have
}

// TestRulesNumbered: the document's sections are numbered once each, in
// order, every subsection under its section; the areas the simulator
// implements each have a section.
func TestRulesNumbered(t *testing.T) {
	text, have := readRules(t)
	for _, p := range checkNumbering(sections(text)) {
		t.Error(p)
	}
	// The areas issue 11 names, by the title the document gives them.
	for _, want := range []struct{ sec, title string }{
		{"1", "Paths"}, {"3", "volume_context"}, {"4", "tokens"}, {"5", "Republish"},
		{"6", "SELinux"}, {"7", "fsGroup"}, {"11", "Capabilities"}, {"12", "Errors"},
		{"13", "Registration"}, {"15", "expansion"}, {"16", "stats"}, {"17", "Retries"},
		{"18", "Block"}, {"19", "Releases"}, {"20", "differs"},
	} {
		re := regexp.MustCompile(`(?m)^## ` + regexp.QuoteMeta(want.sec) + `\. .*` + regexp.QuoteMeta(want.title))
		if !have[want.sec] || !re.MatchString(text) {
			t.Errorf("no section ## %s. about %q", want.sec, want.title)
		}
	}
}

// TestCitationsExist: every section the repository cites exists, and so
// does every "§N" the document uses to point within itself.
func TestCitationsExist(t *testing.T) {
	text, have := readRules(t)
	bad := badCitations("docs/"+rulesFile, text, have, true)
	cited := 0
	for _, path := range repoFiles(t, "..") {
		if filepath.Dir(filepath.ToSlash(path)) == "../docs" {
			continue // the document is checked above; this file cites nothing
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(filepath.ToSlash(path), "../")
		cited += len(citation.FindAllStringIndex(string(b), -1))
		bad = append(bad, badCitations(name, string(b), have, false)...)
		bad = append(bad, outsideRefs("..", name, string(b))...)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	// The walk must have found the code's citations; none found means the
	// walk or the pattern broke, not that all is well.
	if cited == 0 {
		t.Error("found no docs/kubelet.md citation in the repository")
	}
}

// TestConformanceSections: the sections conformance failures and scenarios
// print ("(docs/kubelet.md §11)") exist. They are arguments, not text
// after the document's name, so they are read from the Go source: the
// first argument of fail(...), the Section field of a literal, and the
// second argument of noObject(...).
func TestConformanceSections(t *testing.T) {
	_, have := readRules(t)
	files, err := filepath.Glob("../conformance/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance sources: %v", err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, lit := range sectionLiterals(file) {
			sec, err := strconv.Unquote(lit.Value)
			if err != nil || sec == "" {
				continue // a failure of the simulator itself cites nothing
			}
			found++
			if !have[sec] {
				t.Errorf("%s: conformance cites section %q, which docs/kubelet.md does not have", fset.Position(lit.Pos()), sec)
			}
		}
	}
	if found == 0 {
		t.Error("found no section in conformance/*.go; did fail(...) or Section change shape?")
	}
}

// sectionLiterals finds the string literals that name a section.
func sectionLiterals(file *ast.File) []*ast.BasicLit {
	var lits []*ast.BasicLit
	add := func(e ast.Expr) {
		if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
			lits = append(lits, l)
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			switch name := calleeName(n.Fun); {
			case name == "fail" && len(n.Args) > 0:
				add(n.Args[0])
			case name == "noObject" && len(n.Args) > 1:
				add(n.Args[1])
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Section" {
				add(n.Value)
			}
		}
		return true
	})
	return lits
}

func calleeName(e ast.Expr) string {
	switch f := e.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// TestCheckerCatchesBadCitations: the checks above can fail.
func TestCheckerCatchesBadCitations(t *testing.T) {
	have := map[string]bool{"4": true, "4.4": true, "12": true}
	// Written in pieces, so that the repository walk does not find them.
	doc := "docs/kubelet" + ".md"
	text := "ok (" + doc + " §4.4)\nlist " + doc + " §12, §4.5 and §99\n// wrapped (" + doc + "\n// §13)\nnot a citation §77\n"
	got := badCitations("x.go", text, have, false)
	want := []string{
		"x.go:2: docs/kubelet.md has no section §4.5",
		"x.go:2: docs/kubelet.md has no section §99",
		"x.go:4: docs/kubelet.md has no section §13",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("badCitations:\n got %q\nwant %q", got, want)
	}
	// Written in pieces, as above: documents beside the project, and one
	// the repository has.
	old := "see ../notes/" + "RULES.md 4.4\nand DESIGN" + ".md, but " + "README" + ".md is here"
	if got := outsideRefs("..", "y.go", old); len(got) != 2 || !strings.HasPrefix(got[1], "y.go:2: DESIGN.md ") {
		t.Errorf("outsideRefs(%q) = %q, want the two documents the repository lacks", old, got)
	}
	if got := badCitations("kubelet.md", text, have, true); len(got) != 4 {
		t.Errorf("in the document itself every § counts: got %q", got)
	}
	probs := checkNumbering([]string{"1", "1.1", "2", "2.1", "2.1", "3.1", "3", "10", "9"})
	want = []string{
		"section 2.1 appears twice",
		"section 2.1 comes after 2.1",
		"section 3.1 comes before or without its section 3",
		"section 3 comes after 3.1",
		"section 9 comes after 10",
	}
	if strings.Join(probs, "\n") != strings.Join(want, "\n") {
		t.Errorf("checkNumbering:\n got %q\nwant %q", probs, want)
	}
}
