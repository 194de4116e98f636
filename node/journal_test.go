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
	vol := filepath.Join(inside, "u1", "volumes", "kubernetes.io~csi", "pv-a")
	f := newFileSystem(root)
	f.adopt(&journalContents{
		order:      []string{outside, root + "/../" + filepath.Base(outside), root, inside},
		owned:      map[string]string{outside: recordDir, root + "/../" + filepath.Base(outside): recordDir, root: recordFile, inside: recordDir},
		mountPaths: map[string]bool{outside: true, "/": true, vol + "/mount": true},
		volData:    map[string]map[string]string{vol: {"specVolID": "pv-a", "driverName": "d.example.com", "volumeHandle": "h"}},
	}, ignoreRefused)
	for _, p := range []string{outside, root + "/../" + filepath.Base(outside), root} {
		if f.isOwned(p) {
			t.Errorf("adopted %s", p)
		}
	}
	if f.isMountPath(outside) || f.isMountPath("/") {
		t.Errorf("adopted a mount path outside the root dir")
	}
	if !f.isOwned(inside) || !f.isMountPath(vol+"/mount") {
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
	}, ignoreRefused)
	if !f.isOwned(root) {
		t.Errorf("the root dir the run made was not adopted")
	}
	if f.isOwned(parent) {
		t.Errorf("adopted the root dir's parent %s", parent)
	}
}

// The journal keeps a copy of each pod volume's vol_data.json until the
// volume is done with; `cleanup` gets only the copies still open.
func TestJournalVolumeDataCopies(t *testing.T) {
	root := t.TempDir()
	f := newFileSystem(root)
	open := filepath.Join(root, "pods", "u1", "volumes", "kubernetes.io~csi", "pv-a")
	done := filepath.Join(root, "pods", "u2", "volumes", "kubernetes.io~csi", "pv-b")
	for _, d := range []string{open, done} {
		if err := f.mkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := f.saveVolumeData(d, map[string]string{"specVolID": filepath.Base(d), "driverName": "d.example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	f.forgetVolumeData(done)
	f.journal.close()
	jc, err := readJournal(f.journal.path)
	if err != nil {
		t.Fatal(err)
	}
	g := newFileSystem(root)
	g.adopt(jc, ignoreRefused)
	dirs, copies := g.journaledVolumeData()
	if len(dirs) != 1 || dirs[0] != open || copies[open]["specVolID"] != "pv-a" {
		t.Errorf("journaled vol_data.json copies %v %v, want only %s", dirs, copies, open)
	}
}

// A journal's path is never followed through a symlink: a pod dir
// replaced by a link to elsewhere stops the restore of vol_data.json.
func TestNoSymlinkBelowRoot(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	f := newFileSystem(root)
	if err := os.MkdirAll(filepath.Join(root, "pods"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "pods", "u1")); err != nil {
		t.Fatal(err)
	}
	if err := f.checkPath(filepath.Join(root, "pods", "u1", "volumes", "x")); err == nil {
		t.Error("a path through a symlink was accepted")
	}
	if err := f.checkPath(filepath.Join(root, "pods", "u2", "volumes", "x")); err != nil {
		t.Errorf("a path not yet made was refused: %v", err)
	}
	if err := f.checkPath(elsewhere); err == nil {
		t.Error("a path outside the root dir was accepted")
	}
}

// cleanup takes nothing of a journal through a directory that has become a
// symlink since: what lies behind it is someone else's.
func TestAdoptNotThroughSymlink(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "pods"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "pods", "u1")); err != nil {
		t.Fatal(err)
	}
	through := filepath.Join(root, "pods", "u1", "volumes")
	direct := filepath.Join(root, "pods", "u2")
	f := newFileSystem(root)
	f.adopt(&journalContents{order: []string{through, direct}, owned: map[string]string{through: recordDir, direct: recordDir},
		mountPaths: map[string]bool{through + "/mount": true}}, ignoreRefused)
	if f.isOwned(through) || f.isMountPath(through+"/mount") {
		t.Errorf("adopted a path through a symlink")
	}
	if !f.isOwned(direct) {
		t.Errorf("did not adopt %s", direct)
	}
}

func ignoreRefused(string, string, error) {}
