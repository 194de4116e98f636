package rootdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// One owner per root dir: a second lock on a held root dir is refused and
// names the holder; released, the lock file and the journal dir go.
func TestLockRootOneOwner(t *testing.T) {
	root := t.TempDir()
	l, err := LockRoot(root, "run")
	if err != nil {
		t.Fatal(err)
	}
	if l.Stale != nil {
		t.Errorf("a fresh root dir's lock reported a stale owner %v", *l.Stale)
	}
	_, err = LockRoot(root, "cleanup")
	var held *RootHeldError
	if !errors.As(err, &held) || held.Owner.PID != os.Getpid() || held.Owner.Command != "run" {
		t.Fatalf("second lock: %v, want held by this PID's run", err)
	}
	if !strings.Contains(err.Error(), "PID") || !strings.Contains(err.Error(), "csi-kubelet-sim run") {
		t.Errorf("message does not name the PID and command: %v", err)
	}
	if o, ok := RootHolder(root); !ok || o.PID != os.Getpid() {
		t.Errorf("RootHolder = %v, %v", o, ok)
	}
	l.Release()
	if _, err := os.Lstat(filepath.Join(root, JournalDir)); !os.IsNotExist(err) {
		t.Errorf("journal dir left after release: %v", err)
	}
	if _, ok := RootHolder(root); ok {
		t.Error("RootHolder after release: still held")
	}
	l2, err := LockRoot(root, "run")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Release()
}

// Of many lockers at the same instant exactly one wins.
func TestLockRootRace(t *testing.T) {
	root := t.TempDir()
	var wg sync.WaitGroup
	locks := make([]*RootLock, 16)
	errs := make([]error, 16)
	for i := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			locks[i], errs[i] = LockRoot(root, "run")
		}()
	}
	wg.Wait()
	won := 0
	for i := range locks {
		if errs[i] == nil {
			won++
		} else if !IsRootHeld(errs[i]) {
			t.Errorf("locker %d: %v", i, errs[i])
		}
	}
	if won != 1 {
		t.Errorf("%d lockers won, want exactly 1", won)
	}
}

// A lock file left by a process that is gone is taken over, and its owner
// reported; a refusing command gives it back as it was.
func TestLockRootStale(t *testing.T) {
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, JournalDir), 0o700))
	old := `{"pid":999999999,"start_ticks":1,"started":"2026-01-01T00:00:00Z","cmd":"load"}` + "\n"
	lockPath := filepath.Join(root, JournalDir, LockFileName)
	must(t, os.WriteFile(lockPath, []byte(old), 0o600))
	l, err := LockRoot(root, "run")
	if err != nil {
		t.Fatal(err)
	}
	if l.Stale == nil || l.Stale.PID != 999999999 || l.Stale.Command != "load" {
		t.Errorf("stale owner = %+v", l.Stale)
	}
	l.Restore()
	if got := readFile(lockPath); got != old {
		t.Errorf("lock file after Restore = %q, want %q", got, old)
	}
}

// A symlink where the journal dir should be is refused: the lock and the
// journal would be written elsewhere.
func TestLockRootSymlinkedJournalDir(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	must(t, os.Symlink(elsewhere, filepath.Join(root, JournalDir)))
	_, err := LockRoot(root, "run")
	if !IsSymlinkRefused(err) {
		t.Fatalf("LockRoot = %v, want a symlink refused", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("wrote through the symlink: %v", entries)
	}
	if _, err := Journals(root); !IsSymlinkRefused(err) {
		t.Errorf("Journals = %v, want a symlink refused", err)
	}
}

// cleanup's view: a held root dir under the given one, or above it, is
// found.
func TestHeldRoots(t *testing.T) {
	parent := t.TempDir()
	sub := filepath.Join(parent, "a", "b")
	must(t, os.MkdirAll(sub, 0o750))
	l, err := LockRoot(sub, "conformance")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if h := HeldRoots(parent); len(h) != 1 || h[0].Root != sub {
		t.Errorf("HeldRoots(parent) = %v", h)
	}
	inner := filepath.Join(sub, "01-x")
	must(t, os.Mkdir(inner, 0o750))
	if h := HeldRoots(inner); len(h) != 1 || h[0].Root != sub {
		t.Errorf("HeldRoots(inside) = %v", h)
	}
	if h := HeldRoots(t.TempDir()); len(h) != 0 {
		t.Errorf("HeldRoots(unrelated) = %v", h)
	}
}
