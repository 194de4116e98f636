package main

import (
	"reflect"
	"strings"
	"testing"
)

var testReleases = []string{"v1.30.14", "v1.31.14", "v1.32.13", "v1.33.13", "v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2"}

// pick runs the rules over a diff, with the oldest and newest always in.
func pick(t *testing.T, diff string, files map[string]string) []string {
	t.Helper()
	rels, err := parseReleases(testReleases)
	if err != nil {
		t.Fatal(err)
	}
	s := newSelection(rels)
	s.add(30, "oldest")
	s.add(37, "newest")
	read := func(p string) (string, bool) { c, ok := files[p]; return c, ok }
	for _, f := range parseDiff(diff) {
		applyRules(s, f, read)
	}
	return s.names()
}

func diffOf(path string, removed, added []string) string {
	var b strings.Builder
	b.WriteString("diff --git a/" + path + " b/" + path + "\nindex 1..2 100644\n--- a/" + path + "\n+++ b/" + path + "\n@@ -1 +1 @@\n")
	for _, l := range removed {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range added {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

func TestReleasesChosen(t *testing.T) {
	all := testReleases
	always := []string{"v1.30.14", "v1.37.2"}
	cases := []struct {
		name  string
		diff  string
		files map[string]string
		want  []string
	}{
		{"nothing of the kubelet's", diffOf("README.md", []string{"a"}, []string{"b"}), nil, always},
		{"a version predicate moved", diffOf("node/release/version.go",
			[]string{"func (v Version) KeepsTargetOnFailedRemount() bool { return v.Minor >= 36 }"},
			[]string{"func (v Version) KeepsTargetOnFailedRemount() bool { return v.Minor >= 34 }"}), nil,
			[]string{"v1.30.14", "v1.33.13", "v1.34.4", "v1.35.4", "v1.36.3", "v1.37.2"}},
		{"a comment in a rule file", diffOf("node/release/version.go", nil, []string{"// more words"}), nil, always},
		{"a rule line naming no release", diffOf("node/release/features.go", nil, []string{"	return g.enabled[name]"}), nil, all},
		{"a gate's stage in one release", diffOf("node/release/features.go", nil, []string{"	\"SELinuxMount\": {33: beta},"}), nil,
			[]string{"v1.30.14", "v1.32.13", "v1.33.13", "v1.34.4", "v1.37.2"}},
		{"a new case from 1.35", diffOf("e2e/kubeletdiff/difftable/table.go", nil,
			[]string{`		{Name: "x", MinMinor: 35, Caps: caps("STAGE_UNSTAGE_VOLUME")},`}), nil,
			[]string{"v1.30.14", "v1.35.4", "v1.36.3", "v1.37.2"}},
		{"a case up to 1.31", diffOf("e2e/kubeletdiff/difftable/table.go", nil, []string{`{Name: "y", MaxMinor: 31},`}), nil,
			[]string{"v1.30.14", "v1.31.14", "v1.37.2"}},
		{"a case of every release", diffOf("e2e/kubeletdiff/difftable/table.go", nil, []string{`{Name: "z", Sample: "staged"},`}), nil, all},
		{"an adapter", diffOf("e2e/kubeletdiff/adapt_1_31_to_1_33_test.go", nil, []string{"x"}),
			map[string]string{"e2e/kubeletdiff/adapt_1_31_to_1_33_test.go": "//go:build before1_34 && !before1_31\n\npackage kubeletdiff\n"},
			[]string{"v1.30.14", "v1.31.14", "v1.32.13", "v1.33.13", "v1.37.2"}},
		{"a deleted adapter", diffOf("e2e/kubeletdiff/adapt_since1_36_test.go", []string{"//go:build !before1_36", "", "package kubeletdiff"}, nil), nil,
			[]string{"v1.30.14", "v1.36.3", "v1.37.2"}},
		{"a release's module file", diffOf("e2e/kubeletdiff/go.v1.33.13.sum", nil, []string{"x"}), nil,
			[]string{"v1.30.14", "v1.33.13", "v1.37.2"}},
		{"the harness", diffOf("e2e/kubeletdiff/kubelet_test.go", nil, []string{"x"}), nil, all},
		{"the recorder", diffOf("e2e/kubeletdiff/recorder/recorder.go", nil, []string{"x"}), nil, all},
		{"docs naming a release", diffOf("docs/kubelet.md", nil, []string{"From 1.32 on, any access mode (v1.32.13)."}), nil,
			[]string{"v1.30.14", "v1.32.13", "v1.37.2"}},
		{"product code naming none", diffOf("node/stage.go", nil, []string{"	return nil"}), nil, always},
		{"product code comparing a minor", diffOf("tokens/issuer.go", nil, []string{"	if r.Minor >= 34 {"}), nil,
			[]string{"v1.30.14", "v1.33.13", "v1.34.4", "v1.35.4", "v1.37.2"}},
		{"the Makefile's list of releases", diffOf("Makefile", nil, []string{"KUBEDIFF_RELEASES  := v1.30.14 v1.38.0"}), nil, all},
		{"the Makefile's build tags", diffOf("Makefile", nil, []string{"KUBEDIFF_TAGS       = $(shell seq 1)"}), nil, all},
		{"other Makefile lines", diffOf("Makefile", nil, []string{"kubeletdiff-ci: build", "	@$(MAKE) kubeletdiff-all KUBEDIFF_RELEASES=\"$$rels\""}), nil, always},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := pick(t, c.diff, c.files); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestMinorsNamed(t *testing.T) {
	for line, want := range map[string][]int{
		"since 1.36, not 11.36 nor 1.361": {36},
		"v1.33.13 and 1.30-1.33":          {33, 30, 33},
		"Minor <= 33":                     {33},
		"timeout 30 * time.Second":        nil,
	} {
		if got := minors(line); !reflect.DeepEqual(got, want) {
			t.Errorf("minors(%q) = %v, want %v", line, got, want)
		}
	}
}

// TestNoBaseRunsAll: without the previous commit (a shallow clone, a first
// commit) every release runs.
func TestNoBaseRunsAll(t *testing.T) {
	rels, _ := parseReleases(testReleases)
	var w strings.Builder
	got := choose(rels, "no-such-revision-kubediffreleases", &w)
	if !reflect.DeepEqual(got, testReleases) {
		t.Errorf("got %v, want every release", got)
	}
	if !strings.Contains(w.String(), "cannot tell what changed") {
		t.Errorf("no reason given: %s", w.String())
	}
}

// With a pre-release claimed (v1.38.0-beta.0): it parses; it is not "the
// newest" that runs every time (v1.37.2 is, and goes first); it runs when
// a change touches its rules, its module file, its line of
// node/release/releases.txt or a case that covers it.
func TestPreRelease(t *testing.T) {
	withBeta := append(append([]string{}, testReleases...), "v1.38.0-beta.0")
	rels, err := parseReleases(withBeta)
	if err != nil {
		t.Fatal(err)
	}
	if ga := newestGA(rels); ga.name != "v1.37.2" || !rels[len(rels)-1].pre || rels[len(rels)-1].minor != 38 {
		t.Fatalf("newest GA %v, releases %+v", ga, rels)
	}
	run := func(diff string) []string {
		s := newSelection(rels)
		s.add(30, "oldest")
		s.add(newestGA(rels).minor, "newest")
		for _, f := range parseDiff(diff) {
			applyRules(s, f, func(string) (string, bool) { return "", false })
		}
		return s.names()
	}
	always := []string{"v1.30.14", "v1.37.2"}
	with38 := []string{"v1.30.14", "v1.37.2", "v1.38.0-beta.0"}
	for name, c := range map[string]struct {
		diff string
		want []string
	}{
		"nothing of the kubelet's": {diffOf("README.md", nil, []string{"b"}), always},
		"a rule from 1.38": {diffOf("node/release/version.go", nil, []string{"func (v Version) X() bool { return v.Minor >= 38 }"}),
			with38},
		"a gate removed at 1.38": {diffOf("node/release/features.go", nil, []string{"	ServiceAccountTokenJTI: {alpha: 29, beta: 30, on: 30, ga: 32, locked: 32, removed: 38},"}),
			[]string{"v1.30.14", "v1.31.14", "v1.32.13", "v1.33.13", "v1.37.2", "v1.38.0-beta.0"}},
		"its module file":          {diffOf("e2e/kubeletdiff/go.v1.38.0-beta.0.mod", nil, []string{"x"}), with38},
		"the default module file":  {diffOf("e2e/kubeletdiff/go.sum", nil, []string{"x"}), always},
		"its line of releases.txt": {diffOf("node/release/releases.txt", []string{"v1.38.0-beta.0"}, []string{"v1.38.0"}), with38},
		"a docs row naming 1.38":   {diffOf("docs/kubelet.md", nil, []string{"| 1.38 | the same |"}), with38},
		"a case of every release": {diffOf("e2e/kubeletdiff/difftable/table.go", nil, []string{`{Name: "z", MinMinor: 36},`}),
			[]string{"v1.30.14", "v1.36.3", "v1.37.2", "v1.38.0-beta.0"}},
	} {
		if got := run(c.diff); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", name, got, c.want)
		}
	}
	if got := newestGAFirst([]string{"v1.30.14", "v1.37.2", "v1.38.0-beta.0"}, "v1.37.2"); !reflect.DeepEqual(got, []string{"v1.37.2", "v1.30.14", "v1.38.0-beta.0"}) {
		t.Errorf("newestGAFirst = %v", got)
	}
}
