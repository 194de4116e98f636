// Command releasescheck tells what the module proxy serves of
// k8s.io/kubernetes that node/releases.txt does not claim: a newer patch
// of a claimed minor, a newer pre-release, a newer minor (1.38.0 itself
// when the file claims v1.38.0-beta.0), and the one place to change.
//
//	releasescheck [-releases node/releases.txt] [-versions FILE]
//
// It asks `go list -m -versions k8s.io/kubernetes`, through GOPROXY as
// configured (so it needs the network: `make releases-check` runs it by
// hand, not in CI), or reads the list from -versions (one line, as go
// list prints it). Exit 0 with news or without, 2 for a malformed
// releases file, 3 when the proxy cannot be asked.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

const module = "k8s.io/kubernetes"

func main() {
	releases := flag.String("releases", "node/releases.txt", "the releases the project claims")
	versions := flag.String("versions", "", "read the served versions from this file instead of asking the proxy")
	flag.Parse()
	text, err := os.ReadFile(*releases)
	if err != nil {
		fail(2, err)
	}
	claimed, err := parseClaimed(string(text))
	if err != nil {
		fail(2, fmt.Errorf("%s: %w", *releases, err))
	}
	var served []string
	if *versions != "" {
		b, err := os.ReadFile(*versions)
		if err != nil {
			fail(2, err)
		}
		served = parseServed(string(b))
	} else if served, err = askProxy(); err != nil {
		fail(3, err)
	}
	report(os.Stdout, *releases, claimed, served)
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "releases-check:", err)
	os.Exit(code)
}

// askProxy lists the versions the module proxy serves, in semver order
// (the go command sorts them).
func askProxy() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-versions", module)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m -versions %s (GOPROXY %s): %w: %s", module, os.Getenv("GOPROXY"), err, strings.TrimSpace(stderr.String()))
	}
	served := parseServed(string(out))
	if len(served) == 0 {
		return nil, errors.New("go list -m -versions " + module + " listed no version")
	}
	return served, nil
}

// parseServed reads "k8s.io/kubernetes v1.30.0 v1.30.1 ...".
func parseServed(out string) []string {
	var vs []string
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "v") {
			vs = append(vs, f)
		}
	}
	return vs
}

// tag is a v1.MINOR.PATCH[-PRE] tag.
type tag struct {
	name  string
	minor int
	line  int // in the releases file; 0 for a served version
}

func parseTag(s string) (tag, bool) {
	core, _, _ := strings.Cut(strings.TrimPrefix(s, "v"), "-")
	parts := strings.Split(core, ".")
	if !strings.HasPrefix(s, "v1.") || len(parts) != 3 {
		return tag{}, false
	}
	m, err1 := strconv.Atoi(parts[1])
	_, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		return tag{}, false
	}
	return tag{name: s, minor: m}, true
}

func (t tag) pre() bool { return strings.Contains(t.name, "-") }

// parseClaimed reads the releases file: one tag a line, # comments.
func parseClaimed(text string) ([]tag, error) {
	var out []tag
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		t, ok := parseTag(l)
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not a tag like v1.37.2 or v1.38.0-beta.0", i+1, l)
		}
		t.line = i + 1
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, errors.New("no release")
	}
	return out, nil
}

// finding is one thing the proxy serves that the file does not claim.
type finding struct {
	what   string // the news
	change string // the one change
}

// news compares the claimed tags with the served versions (semver order,
// as go list prints them). A newer version of a claimed minor is one
// listed after the claimed tag; every minor above the newest claimed is
// news too, with its newest version.
func news(file string, claimed []tag, served []string) []finding {
	pos := map[string]int{}
	for i, v := range served {
		pos[v] = i
	}
	var out []finding
	byMinor := map[int]tag{}
	maxMinor := 0
	for _, c := range claimed {
		byMinor[c.minor] = c
		maxMinor = max(maxMinor, c.minor)
	}
	for _, c := range claimed {
		i, ok := pos[c.name]
		if !ok {
			out = append(out, finding{fmt.Sprintf("%s is claimed but the proxy does not serve it", c.name),
				fmt.Sprintf("%s line %d: a tag the proxy serves", file, c.line)})
			continue
		}
		newest := ""
		for _, v := range served[i+1:] {
			if t, ok := parseTag(v); ok && t.minor == c.minor {
				newest = v
			}
		}
		if newest == "" {
			continue
		}
		nt, _ := parseTag(newest)
		var what string
		switch {
		case c.pre() && !nt.pre():
			what = fmt.Sprintf("%s: 1.%d has shipped (claimed: the pre-release %s)", newest, c.minor, c.name)
		case nt.pre():
			what = fmt.Sprintf("%s: a newer pre-release of 1.%d (claimed %s)", newest, c.minor, c.name)
		default:
			what = fmt.Sprintf("%s: a newer patch of 1.%d (claimed %s)", newest, c.minor, c.name)
		}
		out = append(out, finding{what, fmt.Sprintf("%s line %d: %s -> %s", file, c.line, c.name, newest)})
	}
	newer := map[int]string{}
	var order []int
	for _, v := range served {
		if t, ok := parseTag(v); ok && t.minor > maxMinor {
			if _, seen := newer[t.minor]; !seen {
				order = append(order, t.minor)
			}
			newer[t.minor] = v
		}
	}
	for _, m := range order {
		v := newer[m]
		kind := "a new minor"
		if t, _ := parseTag(v); t.pre() {
			kind = "a new minor, as a pre-release"
		}
		out = append(out, finding{fmt.Sprintf("%s: %s", v, kind), fmt.Sprintf("%s: a line %s after %s", file, v, byMinor[maxMinor].name)})
	}
	return out
}

func report(w io.Writer, file string, claimed []tag, served []string) {
	fs := news(file, claimed, served)
	if len(fs) == 0 {
		fmt.Fprintf(w, "releases-check: %s claims the newest %s of every minor from 1.%d the proxy serves (%s to %s)\n",
			file, module, claimed[0].minor, claimed[0].name, claimed[len(claimed)-1].name)
		return
	}
	fmt.Fprintf(w, "releases-check: the proxy serves %d %s release(s) that %s does not claim:\n", len(fs), module, file)
	for _, f := range fs {
		fmt.Fprintf(w, "  %s\n    change: %s\n", f.what, f.change)
	}
	fmt.Fprintln(w, "Then: e2e/kubeletdiff/genmod.sh <tag> and `make kubeletdiff KUBE_VERSION=<tag>` (CONTRIBUTING.md, \"Adding a release\").")
}
