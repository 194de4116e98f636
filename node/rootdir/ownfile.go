package rootdir

// ownfile.go: the simulator's own files (lock, journal, vol_data.json) are
// checked to still be the inode it made; the kubelet trusts its node.

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// openOwnFile opens name under dirfd without following a symlink and
// without blocking (a FIFO there would block an open for reading forever,
// deaf to signals), and refuses it unless fstat on the descriptor says it
// is a regular file, with one name when oneLink (a file the simulator
// writes: a hard link would have it write into another name's file). The
// descriptor is returned blocking again.
func openOwnFile(dirfd int, name, p string, flags int, oneLink bool) (int, error) {
	fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		// A directory (EISDIR) or a socket (ENXIO) is named as such.
		var st unix.Stat_t
		if !errors.Is(err, unix.ENOENT) && unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK {
			if what := fileKind(st.Mode); what != "" {
				return -1, &ForeignFileError{Path: p, What: what}
			}
		}
		return -1, symlinkOr(p, fmt.Errorf("%s: %w", p, err))
	}
	if err := checkOwnFile(fd, p, oneLink); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := setBlocking(fd); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", p, err)
	}
	return fd, nil
}

// checkOwnFile is the fstat check of openOwnFile, on an open descriptor.
func checkOwnFile(fd int, p string, oneLink bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if what := fileKind(st.Mode); what != "" {
		return &ForeignFileError{Path: p, What: what}
	}
	if oneLink && st.Nlink != 1 {
		return &ForeignFileError{Path: p, What: fmt.Sprintf("a hard link (%d names share the file)", st.Nlink)}
	}
	return nil
}

// fileKind names a file type other than a regular file; "" for one.
func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return ""
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "not a regular file"
}

func setBlocking(fd int) error {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	return err
}
