package manifests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// addSamples seeds a fuzz target with the shipped sample manifests.
func addSamples(f *testing.F) {
	files, _ := filepath.Glob("../fixtures/samples/*/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// FuzzLoad: the loader on any bytes never panics, stays within its limits,
// and every problem it reports is one line that names the input. An input
// with several problems is refused with all of them at once (Problems: a
// count, then one line per problem), as the pre-flight documents.
func FuzzLoad(f *testing.F) {
	addSamples(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, noValidation := range []bool{false, true} {
			l := &Loader{Stdin: bytes.NewReader(data), NoValidation: noValidation, Limits: Limits{Objects: 200}}
			_, err := l.Load([]string{"-"})
			if err == nil {
				continue
			}
			problems := []error{err}
			if ps, ok := err.(Problems); ok {
				if want := fmt.Sprintf("%d problems in the input:\n", len(ps)); len(ps) < 2 || !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("%d problems, reported as %q", len(ps), err)
				}
				problems = ps
			}
			for _, p := range problems {
				msg := p.Error()
				if strings.ContainsAny(msg, "\n\r") {
					t.Fatalf("a problem is more than one line: %q", msg)
				}
				if !strings.HasPrefix(msg, "-: ") {
					t.Fatalf("a problem does not name the input: %q", msg)
				}
			}
		}
	})
}

// FuzzNames: a name that ValidateDriverName, ValidatePodUID or
// ValidateSpecName accepts is
// exactly one path segment: joined under a directory it stays there, under
// its own name.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"hostpath.csi.k8s.io", "../../X", "..", ".", "a/b", "9b2f0e3c-1d4a-4e7b-8f6a-0c5d2e1b3a49", "A.B", "a..b", "a\x00b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, check := range map[string]func(string, *field.Path) error{"driver": ValidateDriverName, "uid": ValidatePodUID, "spec": ValidateSpecName} {
			err := check(s, field.NewPath("f"))
			if err != nil {
				if strings.ContainsAny(err.Error(), "\n\r") {
					t.Fatalf("%s %q: error is more than one line: %q", name, s, err)
				}
				continue
			}
			if s == "" {
				continue // an empty UID is derived, never used as is
			}
			const dir = "/root/pods"
			p := filepath.Join(dir, s)
			if filepath.Dir(p) != dir || filepath.Base(p) != s {
				t.Fatalf("%s %q accepted, but %s joins to %s", name, s, dir, p)
			}
		}
	})
}
