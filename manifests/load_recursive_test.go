package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -R reads a directory's whole tree; without it the subdirectories are
// named in a warning, never skipped silently (issue 11, item 1).
func TestLoadRecursive(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: drv.example.com}\nspec: {}\n")
	write("pods/b.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\n")
	write("pods/deeper/c.json", `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t", "namespace": "default"}}`)
	write("empty/notes.txt", "not a manifest")
	for _, tc := range []struct {
		recursive   bool
		wantObjects int
		wantWarn    string
	}{
		{false, 1, dir + ": subdirectories not read: empty, pods (-R reads them)"},
		{true, 3, ""},
	} {
		var warns []string
		l := &Loader{Recursive: tc.recursive, Warn: func(s string) { warns = append(warns, s) }}
		c, err := l.Load([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		if c.Count() != tc.wantObjects || strings.Join(warns, "\n") != tc.wantWarn {
			t.Errorf("recursive=%v: %d objects, warnings %q; want %d, %q", tc.recursive, c.Objects(), warns, tc.wantObjects, tc.wantWarn)
		}
	}
	_, err := (&Loader{Recursive: true}).Load([]string{filepath.Join(dir, "empty")})
	if err == nil || !strings.Contains(err.Error(), "no .yaml, .yml or .json files in the directory") {
		t.Errorf("a tree without manifests: %v", err)
	}
}
