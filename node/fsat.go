package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Every directory and file the simulator makes or removes inside the root
// dir is reached from the root dir's descriptor, opened once, one
// component at a time with O_NOFOLLOW: a symlink planted in the root's
// dirs before or during a run (by hand, or by a driver swapping a dir it
// was given) is refused, and nothing outside the root dir is ever
// created, written or removed through one.

// SymlinkError is a symlink (or other non-directory) found where the
// simulator expects one of the root dir's own directories.
type SymlinkError struct{ Path string }

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s is a symlink: the simulator makes, writes and removes nothing through a symlink in the root dir (it could lead outside it); refused, nothing done there", e.Path)
}

// IsSymlinkRefused tells whether err is a path refused for a symlink in it.
func IsSymlinkRefused(err error) bool {
	var e *SymlinkError
	return errors.As(err, &e)
}

// symlinkOr turns an error of an O_NOFOLLOW open of p into a
// SymlinkError when p is a symlink.
func symlinkOr(p string, err error) error {
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		return err
	}
	if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		return &SymlinkError{Path: p}
	}
	return err
}

// seen notes a symlink refused, wherever the error goes next: the
// kubelet's messages keep only its text, and the command's exit code
// says a symlink was refused (Leftovers.Symlinks).
func (f *fileSystem) seen(err error) error {
	var se *SymlinkError
	if errors.As(err, &se) {
		f.mu.Lock()
		if !slices.Contains(f.symlinks, se.Path) {
			f.symlinks = append(f.symlinks, se.Path)
		}
		f.mu.Unlock()
	}
	return err
}

// refusedSymlinks are the symlinks refused so far.
func (f *fileSystem) refusedSymlinks() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.symlinks)
}

// rootFD is the root dir's descriptor, opened the first time it is
// needed and held: a root dir swapped for a symlink afterwards is not
// followed. A missing root dir (a conformance scenario's) is made first.
func (f *fileSystem) rootFD() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rootfd > 0 {
		return f.rootfd, nil
	}
	root := filepath.Clean(f.root)
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		f.rememberLocked(root, recordDir)
		f.journal.sync()
		if err := os.Mkdir(root, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
			return -1, err
		}
		fd, err = unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return -1, symlinkOr(root, fmt.Errorf("root dir %s: %w", root, err))
	}
	f.rootfd = fd
	return fd, nil
}

// components are p's names below the root dir; p must be the root dir or
// a clean path inside it.
func (f *fileSystem) components(p string) ([]string, error) {
	root := filepath.Clean(f.root)
	if p == root {
		return nil, nil
	}
	if !f.insideRoot(p) {
		return nil, fmt.Errorf("%s is not inside the root dir %s", p, root)
	}
	return strings.Split(strings.TrimPrefix(p, root+"/"), "/"), nil
}

// openDir opens directory p (the root dir or inside it) walking from the
// root dir's descriptor, following no symlink. The caller closes it.
func (f *fileSystem) openDir(p string) (int, error) {
	names, err := f.components(p)
	if err != nil {
		return -1, err
	}
	rfd, err := f.rootFD()
	if err != nil {
		return -1, err
	}
	cur, err := unix.Openat(rfd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	at := filepath.Clean(f.root)
	for _, name := range names {
		at = filepath.Join(at, name)
		next, err := unix.Openat(cur, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return -1, f.seen(symlinkOr(at, &os.PathError{Op: "open", Path: at, Err: err}))
		}
		cur = next
	}
	return cur, nil
}

// parentDir opens p's parent directory and returns p's last name.
func (f *fileSystem) parentDir(p string) (int, string, error) {
	if p == filepath.Clean(f.root) {
		return -1, "", fmt.Errorf("%s is the root dir itself", p)
	}
	fd, err := f.openDir(filepath.Dir(p))
	return fd, filepath.Base(p), err
}

// mkdirAll is os.MkdirAll inside the root dir, component by component
// from the root's descriptor. Each directory it makes is journaled before
// it is made (intent first: a kill -9 between the two leaves a journaled
// path that may not exist, never a made one that is not journaled).
// Volumes mounted side by side (load) make directories under the same
// parents at once; dirMu makes finding, creating and recording them one
// step, so that a parent is always recorded before its children.
func (f *fileSystem) mkdirAll(p string, perm os.FileMode) error {
	f.dirMu.Lock()
	defer f.dirMu.Unlock()
	names, err := f.components(filepath.Clean(p))
	if err != nil {
		return err
	}
	rfd, err := f.rootFD()
	if err != nil {
		return err
	}
	cur, err := unix.Openat(rfd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { unix.Close(cur) }()
	at := filepath.Clean(f.root)
	for _, name := range names {
		at = filepath.Join(at, name)
		var st unix.Stat_t
		if err := unix.Fstatat(cur, name, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			f.rememberKind(at, recordDir)
			if err := unix.Mkdirat(cur, name, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
				return &os.PathError{Op: "mkdir", Path: at, Err: err}
			}
		} else if err != nil {
			return &os.PathError{Op: "stat", Path: at, Err: err}
		}
		next, err := unix.Openat(cur, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return f.seen(symlinkOr(at, &os.PathError{Op: "mkdir", Path: at, Err: err}))
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

// removeAt removes p inside the root dir without following a symlink on
// the way: a directory (rmdir: only when empty) when dir, else a file or a
// symlink the simulator made. A directory that has become a symlink is
// refused and left.
func (f *fileSystem) removeAt(p string, dir bool) error {
	pfd, name, err := f.parentDir(p)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "remove", Path: p, Err: unix.ENOENT}
		}
		return err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "remove", Path: p, Err: err}
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if dir && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return f.seen(&SymlinkError{Path: p})
	}
	flags := 0
	if isDir {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(pfd, name, flags); err != nil {
		return &os.PathError{Op: "remove", Path: p, Err: err}
	}
	return nil
}

// removePath removes p as removeAt does, a directory or a file by what is
// there now.
// The root dir and the parents a command made for it are removed by
// path (only when empty).
func (f *fileSystem) removePath(p string) error {
	if !f.insideRoot(p) {
		return os.Remove(p)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	return f.removeAt(p, fi.IsDir() || f.isOwnedDir(p))
}

// createAt creates (or truncates) the regular file p inside the root dir,
// refusing a symlink at p or on the way.
func (f *fileSystem) createAt(p string, perm os.FileMode) (*os.File, error) {
	pfd, name, err := f.parentDir(p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fd, err := unix.Openat(pfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, f.seen(symlinkOr(p, &os.PathError{Op: "create", Path: p, Err: err}))
	}
	return os.NewFile(uintptr(fd), p), nil
}

// symlinkInRoot makes the symlink p -> target inside the root dir.
func (f *fileSystem) symlinkInRoot(target, p string) error {
	pfd, name, err := f.parentDir(p)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Symlinkat(target, pfd, name); err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: p, Err: err}
	}
	return nil
}
