package conformance

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// mountsAt returns every mountinfo entry whose mount point is p, stacked
// ones too (mountinfo.SingleEntryFilter would stop at the first), in the
// kernel's order.
func mountsAt(p string) ([]*mountinfo.Info, error) {
	return mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.Mountpoint != p, false
	})
}

// mountIDs lists the mount IDs of entries (the first field of
// /proc/self/mountinfo): a new mount, even of the same source, gets a new ID.
func mountIDs(ms []*mountinfo.Info) []int {
	ids := make([]int, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// mountState is what is mounted at a path: the mountinfo entries (the
// stack) and the kernel's unique ID of the top mount. Linux hands a freed
// mountinfo ID to the next mount at once, so an unmount and a new mount of
// the same path usually show the same mountinfo ID; the unique ID
// (statx STATX_MNT_ID_UNIQUE, Linux 6.8) is never reused.
type mountState struct {
	infos  []*mountinfo.Info
	unique uint64 // 0: the kernel has no unique mount IDs
}

func mountStateAt(p string) mountState {
	ms, _ := mountsAt(p)
	s := mountState{infos: ms}
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID_UNIQUE, &st); err == nil && st.Mask&unix.STATX_MNT_ID_UNIQUE != 0 {
		s.unique = st.Mnt_id
	}
	return s
}

// sameMount tells whether two states show the same mount: the same stack
// of mountinfo IDs and, where the kernel has them, the same unique ID.
func sameMount(a, b mountState) bool {
	if !slices.Equal(mountIDs(a.infos), mountIDs(b.infos)) {
		return false
	}
	return a.unique == 0 || b.unique == 0 || a.unique == b.unique
}

// changeText describes a change of mount for a message: "mount ID 43 ->
// 44", adding the unique IDs when the kernel reused the mountinfo ID.
func changeText(a, b mountState) string {
	ai, bi := mountIDs(a.infos), mountIDs(b.infos)
	s := fmt.Sprintf("mount ID %s -> %s", idText(ai), idText(bi))
	if slices.Equal(ai, bi) && a.unique != b.unique {
		s += fmt.Sprintf(" (the kernel reused the number; unique mount ID %d -> %d)", a.unique, b.unique)
	}
	return s
}

func idText(ids []int) string {
	switch len(ids) {
	case 0:
		return "none"
	case 1:
		return strconv.Itoa(ids[0])
	}
	return fmt.Sprint(ids)
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(out), nil
}

// detachUnder lazily unmounts everything below dir (stacked mounts too)
// and returns what is still mounted.
func detachUnder(dir string) []string {
	for range 32 {
		ms, err := mountsUnder(dir)
		if err != nil || len(ms) == 0 {
			return nil
		}
		for _, m := range ms {
			_ = unix.Unmount(m, unix.MNT_DETACH)
		}
	}
	left, _ := mountsUnder(dir)
	return left
}

// contextOption returns the context= mount option of an entry, unquoted,
// from the per-mount or the superblock options.
func contextOption(m *mountinfo.Info) (string, bool) {
	for _, opts := range []string{m.Options, m.VFSOptions} {
		for _, o := range splitOptions(opts) {
			if v, ok := strings.CutPrefix(o, "context="); ok {
				return strings.Trim(v, `"`), true
			}
		}
	}
	return "", false
}

// splitOptions splits mount options at commas outside double quotes (an
// SELinux label has commas in its categories).
func splitOptions(s string) []string {
	var out []string
	quoted, start := false, 0
	for i, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// describePath says what is at p, for failure messages: missing, a
// directory (and whether it is mounted), or something else.
func describePath(p string) string {
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "does not exist"
	case err != nil:
		return err.Error()
	case !fi.IsDir():
		return "is not a directory (" + fi.Mode().Type().String() + ")"
	}
	ms, _ := mountsAt(p)
	if len(ms) > 0 {
		return fmt.Sprintf("is a directory, mounted (%d mount(s), IDs %v)", len(ms), mountIDs(ms))
	}
	return "is a directory, not mounted"
}

// ownerText is "uid:gid mode" of a path.
func ownerText(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return err.Error()
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.Mode().String()
	}
	return fmt.Sprintf("owner %d:%d, mode %s", st.Uid, st.Gid, fi.Mode())
}

// groupWriteFile is created, and removed again, by the volume_mount_group
// check.
const groupWriteFile = "csi-kubelet-sim-fsgroup-check"

// errNoWriter: no program could be run as the pod's user.
var errNoWriter = errors.New("cannot run a program as the pod's user")

// groupWrite runs a child process with the given non-root uid, the gid
// and no supplementary groups, as a container with that fsGroup runs, and
// has it create a file in dir. The child reaches dir through an inherited
// file descriptor (/proc/self/fd/3), as a container reaches its volume
// through a bind mount, without walking the kubelet's 0750 directories
// above it. It returns the file's path.
func groupWrite(dir string, uid, gid uint32) (string, error) {
	prog, err := exec.LookPath("touch")
	args := []string{"/proc/self/fd/3/" + groupWriteFile}
	if err != nil {
		if prog, err = exec.LookPath("sh"); err != nil {
			return "", fmt.Errorf("%w: neither touch nor sh in PATH", errNoWriter)
		}
		args = []string{"-c", `: > "$1"`, "sh", "/proc/self/fd/3/" + groupWriteFile}
	}
	d, err := os.Open(dir)
	if err != nil {
		return "", err
	}
	defer d.Close()
	cmd := exec.Command(prog, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.ExtraFiles = []*os.File{d}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		// The child did not even start (the program is not executable for
		// that user): nothing was learned about the volume.
		return "", fmt.Errorf("%w: %s as uid %d: %v", errNoWriter, prog, uid, err)
	}
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	p := filepath.Join(dir, groupWriteFile)
	if _, err := os.Lstat(p); err != nil {
		return "", fmt.Errorf("the child succeeded but %s is not there: %v", p, err)
	}
	return p, nil
}

// fileGID returns the group of a file, as text.
func fileGID(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return "?"
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(st.Gid), 10)
	}
	return "?"
}
