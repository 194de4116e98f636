package rootdir

// fsat.go is the descriptor-relative file system under the root dir that
// pkg/volume/util/subpath (safeOpen, doSafeMakeDir) keeps for subPaths,
// here for every path the simulator makes or removes.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Every directory and file the simulator makes or removes inside the root
// dir is reached from the root dir's descriptor, opened once, one
// component at a time, following no symlink and crossing into no other
// mount (openat2's RESOLVE_NO_SYMLINKS and RESOLVE_NO_XDEV, or, on a
// kernel without openat2, a comparison of each component's mount ID with
// its parent's): a symlink or a mount planted in the root's dirs before or
// during a run (by hand, or by a driver that bind-mounts a directory of
// its own over one it was given) is refused, and nothing outside the root
// dir is ever created, written or removed through one.
//
// A path handed to the driver (a publish target, a staging path) is
// mounted on by design: it is only ever the last name of a walk, removed
// (rmdir) once the driver has unmounted it, never walked into.

// Seen notes a path refused (a symlink, a mount, a foreign file),
// wherever the error goes next: the kubelet's messages keep only its
// text, and the command's exit code says a path was refused
// (Leftovers.Symlinks, Leftovers.Refused).
func (f *FileSystem) Seen(err error) error {
	f.mu.Lock()
	f.seenLocked(err)
	f.mu.Unlock()
	return err
}

// seenLocked is seen with f.mu held.
func (f *FileSystem) seenLocked(err error) {
	if !IsSymlinkRefused(err) {
		return
	}
	p := refusedPath(err)
	if !slices.Contains(f.symlinks, p) {
		f.symlinks = append(f.symlinks, p)
		f.refused = append(f.refused, err)
	}
}

// Refusals are the paths refused so far, each as its error.
func (f *FileSystem) Refusals() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.refused)
}

// RefusedSymlinks are the symlinks refused so far.
func (f *FileSystem) RefusedSymlinks() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.symlinks)
}

// rootFD is the root dir's descriptor, opened the first time it is
// needed and held: a root dir swapped for a symlink afterwards is not
// followed. A missing root dir (a conformance scenario's) is made first.
func (f *FileSystem) rootFD() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rootfd > 0 {
		return f.rootfd, nil
	}
	root := filepath.Clean(f.root)
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		f.rememberLocked(root, RecordDir)
		f.Journal.sync()
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
func (f *FileSystem) components(p string) ([]string, error) {
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
// root dir's descriptor, following no symlink and crossing into no other
// mount. The caller closes it.
func (f *FileSystem) openDir(p string) (int, error) {
	rfd, err := f.rootFD()
	if err != nil {
		return -1, err
	}
	fd, err := f.walkFrom(rfd, p)
	return fd, f.Seen(err)
}

// walkFrom is openDir from the root dir's descriptor rfd, taking no lock:
// a refusal is the caller's to note.
func (f *FileSystem) walkFrom(rfd int, p string) (int, error) {
	names, err := f.components(p)
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
		next, err := f.openStep(cur, name, at)
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// parentDir opens p's parent directory and returns p's last name.
func (f *FileSystem) parentDir(p string) (int, string, error) {
	if p == filepath.Clean(f.root) {
		return -1, "", fmt.Errorf("%s is the root dir itself", p)
	}
	fd, err := f.openDir(filepath.Dir(p))
	return fd, filepath.Base(p), err
}

// CheckPath tells whether p's existing directories below the root dir are
// plain directories of the root's own mount: no symlink, no mount on the
// way (the first missing one ends the check). A path rebuilt from a
// journal, or one about to be handed to the driver, must not lead out of
// the root dir.
func (f *FileSystem) CheckPath(p string) error {
	rfd, err := f.rootFD()
	if err != nil {
		return err
	}
	return f.Seen(f.checkFrom(rfd, p))
}

// checkFrom is checkPath from rfd, taking no lock.
func (f *FileSystem) checkFrom(rfd int, p string) error {
	names, err := f.components(p)
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
		next, err := f.openStep(cur, name, at)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if err != nil {
			if !IsSymlinkRefused(err) && errors.Is(err, unix.ENOTDIR) {
				return fmt.Errorf("%s is not a directory", at)
			}
			return err
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

// MkdirAll is os.MkdirAll inside the root dir, component by component
// from the root's descriptor. Each directory it makes is journaled before
// it is made (intent first: a kill -9 between the two leaves a journaled
// path that may not exist, never a made one that is not journaled).
// Volumes mounted side by side (load) make directories under the same
// parents at once; dirMu makes finding, creating and recording them one
// step, so that a parent is always recorded before its children.
func (f *FileSystem) MkdirAll(p string, perm os.FileMode) error {
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
			f.RememberKind(at, RecordDir)
			if err := f.journalFailed(); err != nil {
				return err
			}
			if err := unix.Mkdirat(cur, name, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
				return &os.PathError{Op: "mkdir", Path: at, Err: err}
			}
		} else if err != nil {
			return &os.PathError{Op: "stat", Path: at, Err: err}
		}
		next, err := f.openStep(cur, name, at)
		if err != nil {
			return f.Seen(err)
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

// RemoveAt removes p inside the root dir without following a symlink or
// crossing a mount on the way: a directory (rmdir: only when empty) when
// dir, else a file or a symlink the simulator made. A directory that has
// become a symlink, a directory with another mount on it (unless it is a
// path handed to the driver, whose mount makes the rmdir fail), and a
// file that is not the one the simulator made (another inode, a hard
// link) are refused and left.
func (f *FileSystem) RemoveAt(p string, dir bool) error {
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
	typ := st.Mode & unix.S_IFMT
	if dir && typ == unix.S_IFLNK {
		return f.Seen(&SymlinkError{Path: p})
	}
	flags := 0
	switch typ {
	case unix.S_IFDIR:
		flags = unix.AT_REMOVEDIR
		if err := f.notMountedHere(pfd, name, p); err != nil {
			return err
		}
	case unix.S_IFLNK:
	default:
		if err := f.ownFileAt(pfd, name, p, unix.O_PATH); err != nil {
			// A file the driver's or the kubelet's bind mount is on (a
			// block volume's map path): busy, worded as the kubelet's
			// os.Remove words it.
			if pe := (*os.PathError)(nil); errors.As(err, &pe) && errors.Is(pe.Err, unix.EBUSY) {
				return &os.PathError{Op: "remove", Path: p, Err: unix.EBUSY}
			}
			return err
		}
	}
	if err := unix.Unlinkat(pfd, name, flags); err != nil {
		return &os.PathError{Op: "remove", Path: p, Err: err}
	}
	return nil
}

// notMountedHere refuses a directory name in pfd with another mount on
// it, unless it is a path handed to the driver: that one is the driver's
// mount point, and the rmdir that follows fails while it is mounted.
func (f *FileSystem) notMountedHere(pfd int, name, p string) error {
	fd, err := openIn(pfd, name, p, unix.O_PATH|unix.O_DIRECTORY)
	if err == nil {
		unix.Close(fd)
		return nil
	}
	if IsMountRefused(err) && f.IsMountPath(p) {
		return &os.PathError{Op: "remove", Path: p, Err: unix.EBUSY}
	}
	if IsSymlinkRefused(err) {
		return f.Seen(err)
	}
	return &os.PathError{Op: "remove", Path: p, Err: err}
}

// ownFileAt checks, on an open descriptor, that name in pfd is the file
// the simulator made at p: a regular file (or, for the device the kubelet
// binds at a block volume's map path, what the bind put there), with one
// name, and the inode recorded when it was made (a file adopted from a
// journal has none recorded). The file is opened with flags, so that the
// check and what follows act on the same file; the caller closes it when
// keep, else it is closed here. A file remembered but never made by this
// run (its creation found something there) is not its own.
func (f *FileSystem) ownFileAt(pfd int, name, p string, flags int) error {
	fd, err := f.openOwnFile(pfd, name, p, flags)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// openOwnFile is ownFileAt, returning the open descriptor.
func (f *FileSystem) openOwnFile(pfd int, name, p string, flags int) (int, error) {
	if flags&unix.O_PATH == 0 {
		flags |= unix.O_NONBLOCK // a FIFO there must not block the open
	}
	fd, err := openIn(pfd, name, p, flags)
	if err != nil {
		if IsMountRefused(err) && f.IsMountPath(p) {
			return -1, &os.PathError{Op: "open", Path: p, Err: unix.EBUSY}
		}
		return -1, f.Seen(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	if why := f.notOwnFile(p, fd, &st); why != "" {
		unix.Close(fd)
		return -1, f.Seen(&ForeignFileError{Path: p, Why: why})
	}
	return fd, nil
}

// notOwnFile says why st is not the file the simulator made at p ("" when
// it is).
func (f *FileSystem) notOwnFile(p string, fd int, st *unix.Stat_t) string {
	f.mu.Lock()
	id, made := f.inodes[p]
	pending := f.pendingFiles[p]
	f.mu.Unlock()
	typ := st.Mode & unix.S_IFMT
	switch {
	case pending:
		return "its creation found something else there"
	case typ != unix.S_IFREG && !(typ == unix.S_IFBLK && f.IsMountPath(p)):
		return fmt.Sprintf("not a regular file: mode %#o", typ)
	case typ == unix.S_IFREG && st.Nlink != 1:
		return fmt.Sprintf("%d names (hard links) for it", st.Nlink)
	case typ == unix.S_IFREG && made && (id.dev != uint64(st.Dev) || id.ino != st.Ino):
		return fmt.Sprintf("inode %d, not the %d it made", st.Ino, id.ino)
	case typ == unix.S_IFREG && made && id.born != 0 && id.born != bornOf(fd):
		// A file system that reuses a freed inode number gives another
		// file the same one: its birth time tells them apart.
		return fmt.Sprintf("inode %d made at another time than the one it made", st.Ino)
	}
	return ""
}

// fileID is a file's device, inode number and birth time (0: unknown).
type fileID struct{ dev, ino, born uint64 }

// bornOf is fd's birth time in nanoseconds, 0 when the file system does
// not keep it.
func bornOf(fd int) uint64 {
	var stx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BTIME, &stx) != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return uint64(stx.Btime.Sec)*1e9 + uint64(stx.Btime.Nsec)
}

// madeFile records the file the simulator made at p (fd open on it).
func (f *FileSystem) madeFile(p string, fd int) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return
	}
	born := bornOf(fd)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inodes[p] = fileID{dev: uint64(st.Dev), ino: st.Ino, born: born}
	delete(f.pendingFiles, p)
}

// RemovePath removes p as removeAt does, a directory or a file by what is
// there now.
// The root dir and the parents a command made for it are removed by
// path (only when empty).
func (f *FileSystem) RemovePath(p string) error {
	if !f.insideRoot(p) {
		return os.Remove(p)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	return f.RemoveAt(p, fi.IsDir() || f.isOwnedDir(p))
}

// CreateAt creates the regular file p inside the root dir, refusing a
// symlink or a mount on the way and anything already at p (O_EXCL: a
// file, or a hard link to one, raced in there is never written through).
func (f *FileSystem) CreateAt(p string, perm os.FileMode) (*os.File, error) {
	pfd, name, err := f.parentDir(p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fd, err := unix.Openat(pfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, f.Seen(symlinkOr(p, &os.PathError{Op: "create", Path: p, Err: err}))
	}
	f.madeFile(p, fd)
	return os.NewFile(uintptr(fd), p), nil
}

// rewriteAt opens the simulator's own file p for a new content: without
// O_TRUNC, checked on the open descriptor (a regular file, one name, the
// inode it made), then truncated. Anything else at p is refused.
func (f *FileSystem) rewriteAt(p string) (*os.File, error) {
	pfd, name, err := f.parentDir(p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fd, err := f.openOwnFile(pfd, name, p, unix.O_WRONLY)
	if err != nil {
		return nil, err
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "truncate", Path: p, Err: err}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// maxOwnFile bounds what is read back of a file of the simulator's: a
// vol_data.json is a few hundred bytes, but it holds the volume handle,
// which a driver may make megabytes long.
const maxOwnFile = 64 << 20

// readAt reads the simulator's own file p inside the root dir, refusing
// a symlink or a mount on the way and anything at p but the file it made
// (ownFileAt: a hard link there would hand it another file's content; a
// FIFO would block the read).
func (f *FileSystem) readAt(p string) ([]byte, error) {
	pfd, name, err := f.parentDir(p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fd, err := f.openOwnFile(pfd, name, p, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	file := os.NewFile(uintptr(fd), p)
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, maxOwnFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxOwnFile {
		return nil, fmt.Errorf("%s: longer than %d bytes: not a file the simulator wrote", p, maxOwnFile)
	}
	return b, nil
}

// SymlinkInRoot makes the symlink p -> target inside the root dir.
func (f *FileSystem) SymlinkInRoot(target, p string) error {
	pfd, name, err := f.parentDir(p)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Symlinkat(target, pfd, name); err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: p, Err: err}
	}
	f.mu.Lock()
	delete(f.pendingFiles, p)
	f.mu.Unlock()
	return nil
}

// openStep opens the directory name in cur on a walk from the root dir
// (openIn). A directory the simulator did not make (nor a journal it
// took over lists) may be a mount point of the node's own, there before
// the command started (pods/ on a disk of its own): it is taken as it is
// the first time the walk meets it, its mount noted, and refused if
// another mount has come over it since. A directory of the simulator's
// own never has a mount on it.
func (f *FileSystem) openStep(cur int, name, at string) (int, error) {
	fd, err := openIn(cur, name, at, unix.O_PATH|unix.O_DIRECTORY)
	if err == nil || !IsMountRefused(err) {
		return fd, err
	}
	f.mu.Lock()
	own := f.owned[at] || f.journaledDirs[at]
	f.mu.Unlock()
	if own {
		return -1, err
	}
	fd, oerr := unix.Openat(cur, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr != nil {
		return -1, err
	}
	id, ierr := mountID(fd)
	f.mu.Lock()
	prev, seen := f.foundMounts[at]
	if !seen && ierr == nil {
		f.foundMounts[at] = id
	}
	f.mu.Unlock()
	if ierr != nil || (seen && prev != id) {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// refusedPath is the path a refusal names.
func refusedPath(err error) string {
	var e *SymlinkError
	var m *MountError
	var ff *ForeignFileError
	switch {
	case errors.As(err, &e):
		return e.Path
	case errors.As(err, &m):
		return m.Path
	case errors.As(err, &ff):
		return ff.Path
	}
	return ""
}
