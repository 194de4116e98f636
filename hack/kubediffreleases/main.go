// Command kubediffreleases picks the Kubernetes releases CI runs the
// differential test (e2e/kubeletdiff) against: the oldest and the newest on
// every run, and every release whose rules, version predicates, adapters,
// module file or differential cases the change touches, read from `git
// diff` against the previous landing commit. When it cannot tell, it picks
// every release. The rules it applies are in rules.go; CONTRIBUTING.md says
// what runs when.
//
//	kubediffreleases [-base REV] [-newest-first] RELEASE...   (e.g. v1.30.14 ... v1.37.2)
//
// It prints the chosen releases on one line, oldest first, and on stderr
// why each one beyond the oldest and the newest was chosen.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

func main() {
	base := flag.String("base", envOr("KUBEDIFF_BASE", "HEAD~1"), "the commit the change is compared against (the previous landing commit)")
	newestFirst := flag.Bool("newest-first", false, "print the newest release first, then the others oldest first (CI: the newest shares most of its build with webhookdiff, so it is ready first and the next build overlaps its run)")
	flag.Parse()
	rels, err := parseReleases(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubediffreleases:", err)
		os.Exit(2)
	}
	pick := choose(rels, *base, os.Stderr)
	if *newestFirst {
		pick = newestGAFirst(pick, newestGA(rels).name)
	}
	fmt.Println(strings.Join(pick, " "))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// release is one Kubernetes release of the Makefile's list.
type release struct {
	name  string // v1.33.13, v1.38.0-beta.0
	minor int    // 33
	pre   bool   // a pre-release: run only when a change touches it
}

// newestGA is the newest release that is not a pre-release (the default
// release, whose module file is e2e/kubeletdiff/go.mod); the newest of all
// when every one is a pre-release.
func newestGA(rels []release) release {
	for i := len(rels) - 1; i >= 0; i-- {
		if !rels[i].pre {
			return rels[i]
		}
	}
	return rels[len(rels)-1]
}

// newestGAFirst moves the newest GA release to the front (CI: it shares
// most of its build with webhookdiff, so it is ready first), the others
// oldest first.
func newestGAFirst(pick []string, ga string) []string {
	out := []string{}
	for _, p := range pick {
		if p == ga {
			out = append(out, p)
		}
	}
	for _, p := range pick {
		if p != ga {
			out = append(out, p)
		}
	}
	return out
}

func parseReleases(args []string) ([]release, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no releases given (usage: kubediffreleases [-base REV] v1.30.14 ... v1.37.2)")
	}
	var rels []release
	for _, a := range args {
		core, pre, _ := strings.Cut(strings.TrimPrefix(a, "v"), "-")
		parts := strings.Split(core, ".")
		if len(parts) != 3 || parts[0] != "1" {
			return nil, fmt.Errorf("release %q: want v1.N.P or v1.N.P-PRE", a)
		}
		m, err := strconv.Atoi(parts[1])
		if err != nil {
			return nil, fmt.Errorf("release %q: %w", a, err)
		}
		rels = append(rels, release{name: a, minor: m, pre: pre != ""})
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].minor < rels[j].minor })
	return rels, nil
}

// choose returns the releases to run, oldest first, explaining on w.
func choose(rels []release, base string, w io.Writer) []string {
	sel := newSelection(rels)
	sel.add(rels[0].minor, "the oldest, on every run")
	// A pre-release (v1.38.0-beta.0) is not "the newest": it runs, as the
	// releases between, when a change touches it; its build (another Go
	// toolchain, nothing shared with the others) would not fit CI's
	// budget on every run.
	sel.add(newestGA(rels).minor, "the newest release (not a pre-release), on every run")
	diff, err := gitDiff(base)
	if err != nil {
		sel.all(fmt.Sprintf("cannot tell what changed (%v)", err))
	} else {
		for _, fd := range parseDiff(diff) {
			applyRules(sel, fd, readFile)
		}
	}
	for _, r := range rels {
		if why, ok := sel.why[r.minor]; ok {
			fmt.Fprintf(w, "kubediffreleases: %s: %s\n", r.name, why)
		}
	}
	return sel.names()
}

// gitDiff is the change since base: what is checked out (committed or not)
// against base, without context lines.
func gitDiff(base string) (string, error) {
	if out, err := exec.Command("git", "rev-parse", "--verify", "--quiet", base+"^{commit}").Output(); err != nil || len(out) == 0 {
		return "", fmt.Errorf("no commit %s to compare with", base)
	}
	out, err := exec.Command("git", "diff", "--no-renames", "--unified=0", base).Output()
	if err != nil {
		return "", fmt.Errorf("git diff %s: %w", base, err)
	}
	return string(out), nil
}

func readFile(path string) (string, bool) {
	b, err := os.ReadFile(path)
	return string(b), err == nil
}

// fileDiff is one file's changed lines, without their +/- mark.
type fileDiff struct {
	path    string
	removed []string
	added   []string
}

func (f fileDiff) lines() []string { return append(append([]string{}, f.removed...), f.added...) }

// parseDiff splits a unified diff into its files.
func parseDiff(diff string) []fileDiff {
	var files []fileDiff
	var cur *fileDiff
	inHeader := false
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			files = append(files, fileDiff{path: diffPath(l)})
			cur = &files[len(files)-1]
			inHeader = true
		case cur == nil:
		case strings.HasPrefix(l, "@@"):
			inHeader = false
		case inHeader:
		case strings.HasPrefix(l, "+"):
			cur.added = append(cur.added, l[1:])
		case strings.HasPrefix(l, "-"):
			cur.removed = append(cur.removed, l[1:])
		}
	}
	return files
}

// diffPath reads the path of "diff --git a/P b/P" (no renames: both the same).
func diffPath(header string) string {
	rest := strings.TrimPrefix(header, "diff --git ")
	if i := strings.Index(rest, " b/"); i >= 0 {
		return rest[i+len(" b/"):]
	}
	return strings.TrimPrefix(rest, "a/")
}
