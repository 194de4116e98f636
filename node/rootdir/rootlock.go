package rootdir

// rootlock.go has no kubelet counterpart: one kubelet owns a root dir; the
// simulator takes an flock so that no two runs share one.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LockFileName is the file under the journal dir whose flock says which
// process owns the root dir. The kernel drops an flock when its holder
// dies, kill -9 included, so a lock left by a dead run is free to take.
const LockFileName = "lock"

// LockOwner is who holds (or last held) a root dir's lock, as its lock
// file or journal header says: for messages only. Whether it still runs
// is the flock's to tell (a header's PID may be reused, or a zombie's):
// the kernel drops an flock when its holder dies.
type LockOwner struct {
	PID        int       `json:"pid"`
	StartTicks uint64    `json:"start_ticks"`
	Started    time.Time `json:"started"`
	Command    string    `json:"cmd"`
}

func (o LockOwner) String() string {
	if o.PID == 0 {
		return "another process (it has not written its name yet)"
	}
	return fmt.Sprintf("PID %d (`csi-kubelet-sim %s`, started %s)", o.PID, o.Command, o.Started.Format(time.RFC3339))
}

// RootLock is a held lock on a root dir: one simulator process at a time
// makes, mounts or removes anything there.
type RootLock struct {
	Root string
	// Stale is the owner of a lock left by a process that is gone (kill
	// -9, a crash), taken over; nil when the lock was free.
	Stale *LockOwner
	dirfd int
	fd    int
	prev  []byte // the lock file's content before it was taken; nil: it was made
}

// RootHeldError is a root dir locked by a live simulator process.
type RootHeldError struct {
	Root  string // the locked root dir
	Owner LockOwner
}

func (e *RootHeldError) Error() string {
	return fmt.Sprintf("root dir %s is in use by a running csi-kubelet-sim, %s: wait for it to finish or stop it (Ctrl-C); nothing was touched", e.Root, e.Owner)
}

// IsRootHeld tells whether err is a root dir another live process holds.
func IsRootHeld(err error) bool {
	var e *RootHeldError
	return errors.As(err, &e)
}

// LockRoot takes the root dir's lock for command, making the journal dir
// and the lock file without following a symlink; root must be a real path
// (no symlink in it). A lock held by a live process is a RootHeldError.
// The lock is held until Release or the process's end.
func LockRoot(root, command string) (*RootLock, error) {
	dirfd, err := openJournalDir(root, true)
	if err != nil {
		return nil, err
	}
	for range 8 {
		l, retry, err := tryLock(root, dirfd, command)
		if err != nil || !retry {
			if err != nil {
				unix.Close(dirfd)
			}
			return l, err
		}
	}
	unix.Close(dirfd)
	return nil, fmt.Errorf("lock %s: the lock file keeps being replaced", filepath.Join(root, JournalDir, LockFileName))
}

// openJournalDir opens <root>/.csi-kubelet-sim, refusing a symlink or a
// mount there;
// with create, it makes it first.
func openJournalDir(root string, create bool) (int, error) {
	rootfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, symlinkOr(root, fmt.Errorf("root dir %s: %w", root, err))
	}
	defer unix.Close(rootfd)
	if create {
		if err := unix.Mkdirat(rootfd, JournalDir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("journal dir %s: %w", filepath.Join(root, JournalDir), err)
		}
	}
	p := filepath.Join(root, JournalDir)
	// No symlink and no mount there (openIn): the journals and the lock
	// are the simulator's own, never another directory's files.
	fd, err := openIn(rootfd, JournalDir, p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		if IsSymlinkRefused(err) {
			return -1, err
		}
		return -1, fmt.Errorf("journal dir %s: %w", p, err)
	}
	return fd, nil
}

// tryLock opens the lock file and takes its flock. retry: the file was
// removed, made or replaced between the open and the flock (its last owner
// released it, another command made it), so the lock held is on a file
// nobody else will open. The lock file is opened without O_TRUNC, and
// refused unless fstat on the descriptor says it is a regular file with
// one name: a hard link to a foreign file would get the owner written
// into it, a FIFO would block or be removed.
func tryLock(root string, dirfd int, command string) (*RootLock, bool, error) {
	p := filepath.Join(root, JournalDir, LockFileName)
	fd, made, err := openLockFile(dirfd, p)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EEXIST) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, &RootHeldError{Root: root, Owner: waitOwner(dirfd)}
		}
		return nil, false, fmt.Errorf("lock %s: %w", p, err)
	}
	var held, now unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Fstatat(dirfd, LockFileName, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || held.Ino != now.Ino {
		unix.Close(fd)
		return nil, true, nil
	}
	// Linked since the open? Checked again, holding the lock, before
	// anything is written.
	if err := checkOwnFile(fd, p, true); err != nil {
		unix.Close(fd)
		return nil, false, fmt.Errorf("lock: %w", err)
	}
	l := &RootLock{Root: root, dirfd: dirfd, fd: fd}
	if !made && held.Size > 0 {
		l.prev = make([]byte, min(held.Size, 4096))
		n, _ := unix.Pread(fd, l.prev, 0)
		l.prev = l.prev[:max(n, 0)]
	}
	if prev, err := readOwner(fd); err == nil && prev.PID != 0 {
		l.Stale = &prev
	}
	if err := writeOwner(fd, command); err != nil {
		l.Release()
		return nil, false, fmt.Errorf("lock %s: %w", p, err)
	}
	return l, false, nil
}

// openLockFile opens the lock file, or makes it (O_EXCL) when there is
// none; made tells which. ENOENT or EEXIST: it went or came meanwhile.
func openLockFile(dirfd int, p string) (fd int, made bool, err error) {
	fd, err = openOwnFile(dirfd, LockFileName, p, unix.O_RDWR, true)
	if !errors.Is(err, unix.ENOENT) {
		if err != nil {
			return -1, false, fmt.Errorf("lock: %w", err)
		}
		return fd, false, nil
	}
	fd, err = unix.Openat(dirfd, LockFileName, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, false, symlinkOr(p, fmt.Errorf("lock %s: %w", p, err))
	}
	return fd, true, nil
}

// waitOwner reads the lock file's owner; a process that has just taken
// the lock may not have written it yet, so it is read again for a while.
func waitOwner(dirfd int) LockOwner {
	for range 100 {
		fd, err := openOwnFile(dirfd, LockFileName, LockFileName, unix.O_RDONLY, false)
		if err == nil {
			o, err := readOwner(fd)
			unix.Close(fd)
			if err == nil && o.PID != 0 {
				return o
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return LockOwner{}
}

func readOwner(fd int) (LockOwner, error) {
	var o LockOwner
	buf := make([]byte, 4096)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil {
		return o, err
	}
	return o, json.Unmarshal(buf[:n], &o)
}

// writeOwner writes this process into the lock file, synced: a later
// process that finds the lock held names it.
func writeOwner(fd int, command string) error {
	b, _ := json.Marshal(selfOwner(command))
	if err := unix.Ftruncate(fd, 0); err != nil {
		return err
	}
	if _, err := unix.Pwrite(fd, append(b, '\n'), 0); err != nil {
		return err
	}
	return unix.Fsync(fd)
}

func selfOwner(command string) LockOwner {
	t, _ := ProcessStartTicks(os.Getpid())
	return LockOwner{PID: os.Getpid(), StartTicks: t, Started: time.Now().UTC().Truncate(time.Second), Command: command}
}

// Release removes the lock file (while still holding it: a process that
// opened it before sees it replaced and opens it again) and the journal
// dir when nothing else is in it, then drops the lock.
func (l *RootLock) Release() {
	if l == nil || l.fd < 0 {
		return
	}
	_ = unix.Unlinkat(l.dirfd, LockFileName, 0)
	unix.Close(l.fd)
	unix.Close(l.dirfd)
	l.fd, l.dirfd = -1, -1
	_ = unix.Rmdir(filepath.Join(l.Root, JournalDir))
}

// Restore gives the lock up as the root dir was before it was taken (a
// command that refuses the root dir touches nothing): a lock file that was
// there gets its content back, one that was made goes.
func (l *RootLock) Restore() {
	if l == nil || l.fd < 0 {
		return
	}
	if l.prev == nil {
		l.Release()
		return
	}
	_ = unix.Ftruncate(l.fd, 0)
	_, _ = unix.Pwrite(l.fd, l.prev, 0)
	unix.Close(l.fd)
	unix.Close(l.dirfd)
	l.fd, l.dirfd = -1, -1
}

// ProcessStartTicks is field 22 of /proc/<pid>/stat: when the process
// started, in clock ticks since boot.
func ProcessStartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields are counted after its closing parenthesis.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// RootHolder tells whether a live process holds dir's lock, without
// taking it: the owner when it does.
func RootHolder(dir string) (LockOwner, bool) {
	dirfd, err := openJournalDir(dir, false)
	if err != nil {
		return LockOwner{}, false
	}
	defer unix.Close(dirfd)
	fd, err := openOwnFile(dirfd, LockFileName, LockFileName, unix.O_RDONLY, false)
	if err != nil {
		return LockOwner{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || len(flockHolders(st)) == 0 {
		return LockOwner{}, false
	}
	return waitOwner(dirfd), true
}

// HeldAbove are the root dirs above dir that a live simulator process
// holds: dir is inside one of its root dirs (a `conformance` run's
// scenario dirs are).
func HeldAbove(dir string) []*RootHeldError {
	var held []*RootHeldError
	for d := filepath.Dir(dir); d != filepath.Dir(d); d = filepath.Dir(d) {
		if o, ok := RootHolder(d); ok {
			held = append(held, &RootHeldError{Root: d, Owner: o})
		}
	}
	return held
}

// HeldRoots are the root dirs at or under dir, and above it, that a live
// simulator process holds: `cleanup --root-dir dir` must touch none of
// them. The walk below dir is bounded (depth and entries) and follows no
// symlink.
func HeldRoots(dir string) []*RootHeldError {
	held := HeldAbove(dir)
	budget := 10000
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		if o, ok := RootHolder(d); ok {
			held = append(held, &RootHeldError{Root: d, Owner: o})
		}
		if depth == 0 {
			return
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range entries {
			if budget--; budget < 0 {
				return
			}
			if e.Type().IsDir() && e.Name() != JournalDir {
				walk(filepath.Join(d, e.Name()), depth-1)
			}
		}
	}
	walk(dir, 4)
	return held
}

// flockHolders are the PIDs that hold an flock on the file, from
// /proc/locks: probing with flock itself would, for an instant, make a run
// starting on that root dir see it held.
func flockHolders(st unix.Stat_t) []int {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	var pids []int
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF"; a blocked
		// waiter's line starts "1: ->" and shifts the fields by one.
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == want {
			pid, _ := strconv.Atoi(f[4])
			pids = append(pids, pid)
		}
	}
	return pids
}

// OpenSimDir opens the simulator's own dir under root (<root>/.csi-kubelet-sim,
// which holds the journals, the lock and the sidecars' records) from the
// root dir's descriptor, refusing a symlink or a mount there; with create,
// it makes it first. The caller closes it.
func OpenSimDir(root string, create bool) (int, error) {
	return openJournalDir(root, create)
}

// RemoveInSimDir removes the file name from the simulator's own dir under
// root, reached from the root dir's descriptor: a symlink or a mount at
// the dir is refused, and so is a file that is not a regular file with one
// name, or (want not nil) not the inode want describes.
func RemoveInSimDir(root, name string, want *unix.Stat_t) error {
	dirfd, err := openJournalDir(root, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	p := filepath.Join(root, JournalDir, name)
	fd, err := openIn(dirfd, name, p, unix.O_PATH)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	switch {
	case err != nil:
		return &os.PathError{Op: "stat", Path: p, Err: err}
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &ForeignFileError{Path: p, Why: fmt.Sprintf("not a regular file: mode %#o", st.Mode&unix.S_IFMT)}
	case st.Nlink != 1:
		return &ForeignFileError{Path: p, Why: fmt.Sprintf("%d names (hard links) for it", st.Nlink)}
	case want != nil && (want.Dev != st.Dev || want.Ino != st.Ino):
		return &ForeignFileError{Path: p, Why: fmt.Sprintf("inode %d, not the %d it made", st.Ino, want.Ino)}
	}
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: p, Err: err}
	}
	return nil
}

// RemoveSimDir removes the simulator's own dir under root when it is
// empty, by its name in the root dir's descriptor (rmdir: a mount there
// makes it fail, and nothing inside is touched).
func RemoveSimDir(root string) {
	rootfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(rootfd)
	_ = unix.Unlinkat(rootfd, JournalDir, unix.AT_REMOVEDIR)
}
