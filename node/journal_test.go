package node

import (
	"os"
	"path/filepath"
	"testing"
)

// A journal edited to name paths outside the root dir (or leading out of
// it) is not followed: cleanup takes only what lies inside.
func TestAdoptOnlyInsideRoot(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(root, "pods")
	f := newFileSystem(root)
	f.adopt(&journalContents{
		order:      []string{outside, root + "/../" + filepath.Base(outside), root, inside},
		mountPaths: map[string]bool{outside: true, "/": true, inside + "/mount": true},
	})
	for _, p := range []string{outside, root + "/../" + filepath.Base(outside), root} {
		if f.isOwned(p) {
			t.Errorf("adopted %s", p)
		}
	}
	if f.isMountPath(outside) || f.isMountPath("/") {
		t.Errorf("adopted a mount path outside the root dir")
	}
	if !f.isOwned(inside) || !f.isMountPath(inside+"/mount") {
		t.Errorf("did not adopt the paths inside the root dir")
	}
}

// The root dir a run made is taken back by `cleanup` (it goes only when
// empty, so that the run leaves nothing behind), and only the root dir:
// never its parents, which the journal could name as well.
func TestAdoptMadeRootDir(t *testing.T) {
	root := t.TempDir()
	f := newFileSystem(root)
	parent := filepath.Dir(root)
	f.adopt(&journalContents{
		order: []string{parent, root},
		owned: map[string]string{parent: recordDir, root: recordDir},
	})
	if !f.isOwned(root) {
		t.Errorf("the root dir the run made was not adopted")
	}
	if f.isOwned(parent) {
		t.Errorf("adopted the root dir's parent %s", parent)
	}
}
