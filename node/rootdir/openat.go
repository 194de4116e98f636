package rootdir

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
	mount "k8s.io/mount-utils"
)

// openat.go: the walk from the root dir's descriptor, one component at a
// time (openat2 RESOLVE_NO_SYMLINKS|RESOLVE_NO_XDEV, or the mount ID
// compared), that pkg/volume/util/subpath's safeOpen makes for a subPath,
// and the refusals it returns: the lowest layer of the root dir.

// SymlinkError is a symlink (or other non-directory) found where the
// simulator expects one of the root dir's own directories.
type SymlinkError struct{ Path string }

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s is a symlink: the simulator makes, writes and removes nothing through a symlink in the root dir (it could lead outside it); refused, nothing done there", e.Path)
}

// MountError is a mount found where the simulator expects one of the
// root dir's own directories (or its own file): whatever is mounted there
// is another directory, perhaps outside the root dir.
type MountError struct{ Path string }

func (e *MountError) Error() string {
	return fmt.Sprintf("%s is a mount point: a mount was found where the simulator's own dir was expected; the simulator makes, writes and removes nothing inside another mount (it could lead outside the root dir); refused, nothing done there", e.Path)
}

// IsSymlinkRefused tells whether err is a path refused for a symlink, a
// mount or a foreign file (a hard link) in the root dir's own dirs: all
// are refused the same way, exit code 2.
func IsSymlinkRefused(err error) bool {
	var e *SymlinkError
	var m *MountError
	var ff *ForeignFileError
	return errors.As(err, &e) || errors.As(err, &m) || errors.As(err, &ff)
}

// IsMountRefused tells whether err is a path refused for a mount in it.
func IsMountRefused(err error) bool {
	var m *MountError
	return errors.As(err, &m)
}

// symlinkOr turns an error of an O_NOFOLLOW open of p into a
// SymlinkError when p is a symlink.
func symlinkOr(p string, err error) error {
	if errors.Is(err, unix.EXDEV) {
		return &MountError{Path: p}
	}
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		return err
	}
	if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		return &SymlinkError{Path: p}
	}
	return err
}

// resolveInRoot: no symlink, no other mount, nothing above the directory.
const resolveInRoot = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS

// noOpenat2 is set once openat2 is found missing (ENOSYS: a kernel older
// than 5.6); the walk then compares mount IDs. Tests set it to run the
// fallback.
var noOpenat2 atomic.Bool

// openIn opens the single name in directory dirfd with flags, following
// no symlink (the last name included, unless flags has O_PATH, which then
// opens a symlink itself) and crossing into no other mount: a name that
// is a mount point is a MountError. at is the path, for errors.
func openIn(dirfd int, name, at string, flags int) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !noOpenat2.Load() {
		fd, err := openat2(dirfd, name, flags)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOSYS):
			noOpenat2.Store(true)
		case errors.Is(err, unix.EPERM):
			// A seccomp filter that does not know openat2 (older
			// container runtimes) answers EPERM: when openat works,
			// openat2 is what is refused.
			if fd, oerr := unix.Openat(dirfd, name, flags, 0); oerr == nil {
				unix.Close(fd)
				noOpenat2.Store(true)
				break
			}
			return -1, symlinkOr(at, &os.PathError{Op: "open", Path: at, Err: err})
		default:
			return -1, symlinkOr(at, &os.PathError{Op: "open", Path: at, Err: err})
		}
	}
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err != nil {
		return -1, symlinkOr(at, &os.PathError{Op: "open", Path: at, Err: err})
	}
	same, err := sameMount(dirfd, fd)
	if err != nil || !same {
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("%s: mount of: %w", at, err)
		}
		return -1, &MountError{Path: at}
	}
	return fd, nil
}

// openat2 is unix.Openat2 with resolveInRoot, again on EAGAIN (the
// kernel's answer when a rename or a mount raced the lookup).
func openat2(dirfd int, name string, flags int) (int, error) {
	var err error
	for range 8 {
		var fd int
		fd, err = unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags), Resolve: resolveInRoot})
		if !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
	return -1, err
}

// sameMount tells whether two descriptors are on the same mount.
func sameMount(a, b int) (bool, error) {
	ma, err := mountID(a)
	if err != nil {
		return false, err
	}
	mb, err := mountID(b)
	if err != nil {
		return false, err
	}
	return ma == mb, nil
}

// mountID is the mount ID of fd: statx's STATX_MNT_ID (Linux 5.8), else
// the mnt_id line of /proc/self/fdinfo (Linux 3.15).
func mountID(fd int) (uint64, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx); err == nil && stx.Mask&unix.STATX_MNT_ID != 0 {
		return stx.Mnt_id, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no mnt_id in fdinfo")
}

// IsMountPoint reads the mount table only, which needs none of a
// mounter's settings: mount.New("") would fork and exec `umount` on every
// call to probe its not-mounted behaviour (fs.go's newFileSystem says the
// same), and cleanup asks this for every path it removes.
func IsMountPoint(p string) (bool, error) {
	return (&mount.Mounter{}).IsMountPoint(p)
}

// ForeignFileError is a path where the simulator keeps a file of its own
// (the root dir's lock, a journal, a vol_data.json) that holds something
// it did not make there: a FIFO, a device, a socket, a directory, a hard
// link that another name shares (a file outside the root dir, perhaps),
// or another inode than the one it made. Nothing is written to it, read
// from it or removed.
type ForeignFileError struct {
	Path string
	What string // "a FIFO", "a hard link (2 names share the file)"; "" for another file
	Why  string // what tells it apart, when What does not say it
}

func (e *ForeignFileError) Error() string {
	what, why := e.What, ""
	if what == "" {
		what = "another file"
	}
	if e.Why != "" {
		why = " (" + e.Why + ")"
	}
	return fmt.Sprintf("%s is %s, not a file the simulator made%s: refused, nothing written to it or removed (remove it by hand if it is no one's)", e.Path, what, why)
}

// IsForeignFile tells whether err is a file of the simulator's own found
// to be something else.
func IsForeignFile(err error) bool {
	var e *ForeignFileError
	return errors.As(err, &e)
}
