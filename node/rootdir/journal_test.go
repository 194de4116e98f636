package rootdir

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
	f := NewFileSystem(root)
	f.Adopt(&JournalContents{
		order:      []string{outside, root + "/../" + filepath.Base(outside), root, inside},
		Owned:      map[string]string{outside: RecordDir, root + "/../" + filepath.Base(outside): RecordDir, root: recordFile, inside: RecordDir},
		MountPaths: map[string]bool{outside: true, "/": true, vol + "/mount": true},
		VolData:    map[string]map[string]string{vol: {"specVolID": "pv-a", "driverName": "d.example.com", "volumeHandle": "h"}},
	}, ignoreRefused)
	for _, p := range []string{outside, root + "/../" + filepath.Base(outside), root} {
		if f.IsOwned(p) {
			t.Errorf("adopted %s", p)
		}
	}
	if f.IsMountPath(outside) || f.IsMountPath("/") {
		t.Errorf("adopted a mount path outside the root dir")
	}
	if !f.IsOwned(inside) || !f.IsMountPath(vol+"/mount") {
		t.Errorf("did not adopt the paths inside the root dir")
	}
}

// The root dir a run made is taken back by `cleanup` (it goes only when
// empty, so that the run leaves nothing behind), and only the root dir:
// never its parents, which the journal could name as well.
func TestAdoptMadeRootDir(t *testing.T) {
	root := t.TempDir()
	f := NewFileSystem(root)
	parent := filepath.Dir(root)
	f.Adopt(&JournalContents{
		order: []string{parent, root},
		Owned: map[string]string{parent: RecordDir, root: RecordDir},
	}, ignoreRefused)
	if !f.IsOwned(root) {
		t.Errorf("the root dir the run made was not adopted")
	}
	if f.IsOwned(parent) {
		t.Errorf("adopted the root dir's parent %s", parent)
	}
}

// The journal keeps a copy of each pod volume's vol_data.json until the
// volume is done with; `cleanup` gets only the copies still open.
func TestJournalVolumeDataCopies(t *testing.T) {
	root := t.TempDir()
	f := NewFileSystem(root)
	open := filepath.Join(root, "pods", "u1", "volumes", "kubernetes.io~csi", "pv-a")
	done := filepath.Join(root, "pods", "u2", "volumes", "kubernetes.io~csi", "pv-b")
	for _, d := range []string{open, done} {
		if err := f.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := f.SaveVolumeData(d, map[string]string{"specVolID": filepath.Base(d), "driverName": "d.example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	f.ForgetVolumeData(done)
	f.Journal.Close()
	jc, err := ReadJournal(f.Journal.Path)
	if err != nil {
		t.Fatal(err)
	}
	g := NewFileSystem(root)
	g.Adopt(jc, ignoreRefused)
	dirs, copies := g.JournaledVolumeData()
	if len(dirs) != 1 || dirs[0] != open || copies[open]["specVolID"] != "pv-a" {
		t.Errorf("journaled vol_data.json copies %v %v, want only %s", dirs, copies, open)
	}
}

// A journal's path is never followed through a symlink: a pod dir
// replaced by a link to elsewhere stops the restore of vol_data.json.
func TestNoSymlinkBelowRoot(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	f := NewFileSystem(root)
	if err := os.MkdirAll(filepath.Join(root, "pods"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "pods", "u1")); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckPath(filepath.Join(root, "pods", "u1", "volumes", "x")); err == nil {
		t.Error("a path through a symlink was accepted")
	}
	if err := f.CheckPath(filepath.Join(root, "pods", "u2", "volumes", "x")); err != nil {
		t.Errorf("a path not yet made was refused: %v", err)
	}
	if err := f.CheckPath(elsewhere); err == nil {
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
	f := NewFileSystem(root)
	f.Adopt(&JournalContents{order: []string{through, direct}, Owned: map[string]string{through: RecordDir, direct: RecordDir},
		MountPaths: map[string]bool{through + "/mount": true}}, ignoreRefused)
	if f.IsOwned(through) || f.IsMountPath(through+"/mount") {
		t.Errorf("adopted a path through a symlink")
	}
	if !f.IsOwned(direct) {
		t.Errorf("did not adopt %s", direct)
	}
}

func ignoreRefused(string, string, error) {}
