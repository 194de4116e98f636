package rootdir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A journal that cannot be written (a full file system) stops the run
// where it stands: no directory is made and no driver call that mounts is
// sent without its record, since after a kill -9 cleanup could not find
// them.
func TestJournalFailureStopsMaking(t *testing.T) {
	root := t.TempDir()
	f := NewFileSystem(root)
	defer f.Finish(true)
	f.journalErr = &os.PathError{Op: "write", Path: filepath.Join(root, JournalDir, "run.journal"), Err: syscall.ENOSPC}

	dir := filepath.Join(root, "pods", "uid", "volumes")
	if err := f.MkdirAll(dir, 0o750); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("mkdirAll with a failed journal: %v, want the journal's ENOSPC", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "pods")); !os.IsNotExist(err) {
		t.Errorf("a directory was made without its journal record: %v", err)
	}
	if err := f.CallStarted("NodeStageVolume", filepath.Join(root, "globalmount")); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("callStarted with a failed journal: %v, want the journal's ENOSPC", err)
	}
}
