package rootdir

// fs.go is the kubelet's own changes to the root dir (os.MkdirAll, os.Remove,
// mount-utils' unmounts in pkg/volume/util), each recorded in the journal.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	mount "k8s.io/mount-utils"
)

// FileSystem makes the kubelet's changes to the root dir and records every
// directory and file it creates, the moment it creates it, in memory and in
// the run's journal (journal.go), so that whatever way a run ends, it can be
// undone, and so that nothing else is ever removed or unmounted.
type FileSystem struct {
	mu         sync.Mutex
	dirMu      sync.Mutex // held by mkdirAll
	root       string
	Command    string
	created    []string
	owned      map[string]bool
	ownedDirs  map[string]bool   // the owned paths that are directories
	inFlight   map[string]string // adopted journals' unanswered driver calls, by path
	mountPaths map[string]bool
	// journalVolData: the vol_data.json copies of adopted journals (cleanup)
	journalVolData map[string]map[string]string
	kept           []string // volumes left in place after a failed teardown
	Journal        *journal
	journalErr     error
	keptJournal    string
	mounter        mount.Interface
	rootfd         int       // the root dir, opened once (fsat.go)
	Lock           *RootLock // the root dir's lock, released when the run leaves nothing
	symlinks       []string  // paths refused in the root's own dirs: symlinks, mounts, foreign files (fsat.go)
	refused        []error   // the refusals of symlinks, each as its error
	inodes         map[string]fileID
	pendingFiles   map[string]bool // files remembered and not (yet) made by this run
	// journaledDirs are the directories the journals adopt lists, known
	// before adopt checks them; foundMounts the mount IDs of mount points
	// met at directories not the simulator's (fsat.go's openStep).
	journaledDirs map[string]bool
	foundMounts   map[string]uint64
}

func NewFileSystem(root string) *FileSystem {
	// The mounter is used for IsLikelyNotMountPoint and GetMountRefs only,
	// which need none of its settings: mount.New("") would fork and exec
	// `umount` at once to probe a behaviour of Unmount (mount-utils'
	// detectSafeNotMountedBehavior), a cost every run paid for nothing.
	return &FileSystem{root: root, owned: map[string]bool{}, ownedDirs: map[string]bool{}, inFlight: map[string]string{}, mountPaths: map[string]bool{},
		journalVolData: map[string]map[string]string{}, mounter: &mount.Mounter{},
		inodes: map[string]fileID{}, pendingFiles: map[string]bool{}, journaledDirs: map[string]bool{}, foundMounts: map[string]uint64{}}
}

// InTheWayError is a path the simulator needs to create that already
// exists and is not its own: another program's (on a real node, the real
// kubelet's) files, which the simulator does not touch.
type InTheWayError struct{ Path string }

func (e *InTheWayError) Error() string {
	return fmt.Sprintf("%s already exists and was not made by this simulator: it belongs to someone else (on a real node, perhaps the kubelet); the simulator does not touch it", e.Path)
}

// Record appends r to the journal (f.mu held); it is synced by sync,
// after f.mu is released, before the action it announces.
func (f *FileSystem) Record(r JournalRecord) {
	if f.Journal == nil && f.journalErr == nil {
		f.Journal, f.journalErr = openJournal(f.root, f.Command)
	}
	if f.Journal != nil {
		if err := f.Journal.Write(r); err != nil && f.journalErr == nil {
			f.journalErr = err
		}
	}
}

// note records r and syncs it: the one way to journal an intent.
func (f *FileSystem) note(r JournalRecord) {
	f.mu.Lock()
	f.Record(r)
	j := f.Journal
	f.mu.Unlock()
	j.sync()
}

func (f *FileSystem) Remember(p string) { f.RememberKind(p, recordFile) }

func (f *FileSystem) RememberKind(p, kind string) {
	f.mu.Lock()
	f.rememberLocked(p, kind)
	j := f.Journal
	f.mu.Unlock()
	j.sync()
}

// rememberLocked records p as made by the simulator (f.mu held).
func (f *FileSystem) rememberLocked(p, kind string) {
	if f.owned[p] {
		return
	}
	f.created = append(f.created, p)
	f.owned[p] = true
	if kind == RecordDir {
		f.ownedDirs[p] = true
	} else {
		f.pendingFiles[p] = true
	}
	f.Record(JournalRecord{Kind: kind, Path: p})
}

// MarkMountPath records that p is, or is about to be, a mount point: a
// path handed to the driver (target, staging, block publish) or one the
// kubelet bind-mounts. Nothing inside such a path is ever deleted.
func (f *FileSystem) MarkMountPath(p string) {
	f.mu.Lock()
	if !f.mountPaths[p] {
		f.mountPaths[p] = true
		f.Record(JournalRecord{Kind: recordMount, Path: p})
	}
	j := f.Journal
	f.mu.Unlock()
	j.sync()
}

// CallStarted journals a driver call that may mount at p, before it is
// sent; callEnded its answer (whatever it was). The call is not to be
// sent when its intent could not be journaled (journalFailed).
func (f *FileSystem) CallStarted(op, p string) error {
	f.note(JournalRecord{Kind: recordCall, Op: op, Path: p})
	return f.journalFailed()
}

// journalFailed is the error of a journal that could not be opened or
// written (a full file system): from then on nothing more is made, and
// no driver call that mounts is sent, since a kill -9 would leave what
// cleanup cannot find.
func (f *FileSystem) journalFailed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.journalErr == nil {
		return nil
	}
	return fmt.Errorf("%w: nothing more is made or mounted without its journal record (cleanup could not finish it after a crash)", f.journalErr)
}

func (f *FileSystem) CallEnded(op, p string) {
	f.note(JournalRecord{Kind: recordCalled, Op: op, Path: p})
}

// CallInFlight tells whether an adopted journal shows a driver call at p
// that was never answered: the driver may still be in it.
func (f *FileSystem) CallInFlight(p string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op, ok := f.inFlight[p]
	return op, ok
}

func (f *FileSystem) IsOwned(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.owned[p]
}

func (f *FileSystem) isOwnedDir(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ownedDirs[p]
}

// ReleaseLock drops the root dir's lock when the run leaves nothing.
func (f *FileSystem) ReleaseLock() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Lock.Release()
	f.Lock = nil
}

func (f *FileSystem) IsMountPath(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mountPaths[p]
}

// ForgetVolumeData records that the volume in dir is done with (torn
// down, or its first SetUp failed): `cleanup` has nothing of it to rebuild.
func (f *FileSystem) ForgetVolumeData(dir string) {
	f.note(JournalRecord{Kind: RecordVolData, Path: dir})
}

// JournaledVolumeData returns the copies of vol_data.json that adopted
// journals hold, by directory, in a stable order.
func (f *FileSystem) JournaledVolumeData() ([]string, map[string]map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dirs := make([]string, 0, len(f.journalVolData))
	out := make(map[string]map[string]string, len(f.journalVolData))
	for d, data := range f.journalVolData {
		dirs = append(dirs, d)
		out[d] = data
	}
	sort.Strings(dirs)
	return dirs, out
}

// insideParentsCheck tells, for every path a journal lists, whether it is
// strictly below the root dir through plain directories of the root's own
// mount only (since the journal was written, a directory on the way may
// have been replaced by a symlink, or had another directory mounted over
// it, and nothing is removed or unmounted through one),
// each parent checked once, before adopt takes f.mu; a parent refused for
// a symlink or a mount is told to refuse once, and noted.
func (f *FileSystem) insideParentsCheck(jc *JournalContents, refuse func(kind, p string, err error)) func(string) bool {
	checked := map[string]error{}
	check := func(p string) {
		if !f.insideRoot(p) {
			return
		}
		d := filepath.Dir(p)
		if _, ok := checked[d]; ok {
			return
		}
		err := f.CheckPath(d)
		checked[d] = err
		if IsSymlinkRefused(err) {
			refuse("path", d, err)
		}
	}
	for _, p := range jc.order {
		check(p)
	}
	for p := range jc.MountPaths {
		check(p)
	}
	for d := range jc.VolData {
		check(d)
	}
	return func(p string) bool {
		if !f.insideRoot(p) {
			return false
		}
		err, ok := checked[filepath.Dir(p)]
		return ok && err == nil
	}
}

// insideRoot tells whether p is a clean path strictly below the root dir.
func (f *FileSystem) insideRoot(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && strings.HasPrefix(p, filepath.Clean(f.root)+"/")
}

// Created returns what was created, oldest first.
func (f *FileSystem) Created() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.created...)
}

// ownedUnder lists what the simulator created strictly below dir, deepest
// first, skipping everything below a mount path.
func (f *FileSystem) ownedUnder(dir string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for i := len(f.created) - 1; i >= 0; i-- {
		c := f.created[i]
		if !strings.HasPrefix(c, dir+"/") || f.belowMountPath(c) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// belowMountPath tells whether p lies inside a path that is or was a mount
// point (f.mu held).
func (f *FileSystem) belowMountPath(p string) bool {
	for d := filepath.Dir(p); d != "/" && d != "." && len(d) >= len(f.root); d = filepath.Dir(d) {
		if f.mountPaths[d] {
			return true
		}
	}
	return false
}

// MountRefs is the CSI plugin's GetDeviceMountRefs: other mount points of
// the same source as path.
func (f *FileSystem) MountRefs(path string) ([]string, error) {
	return f.mounter.GetMountRefs(path)
}

// Keep marks a path to be left as it is by Cleanup: a volume whose
// teardown failed stays mounted with its files, for `cleanup` to finish
// through the driver.
func (f *FileSystem) Keep(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.kept {
		if k == p {
			return
		}
	}
	f.kept = append(f.kept, p)
}

// IsKept tells whether p is a kept path or lies inside one.
func (f *FileSystem) IsKept(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.kept {
		if p == k || strings.HasPrefix(p, k+"/") {
			return true
		}
	}
	return false
}

func (f *FileSystem) KeptPaths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.kept...)
}

// Finish removes the journal when the run left nothing of its own, and
// keeps it (for `cleanup`) otherwise.
func (f *FileSystem) Finish(clean bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Journal == nil {
		if clean {
			f.Lock.Release()
			f.Lock = nil
		}
		return
	}
	if clean {
		f.Lock.Release()
		f.Lock = nil
		if err := f.Journal.remove(); err != nil {
			// Kept: a refusal (a mount over the journal dir) is told,
			// with the journal, and `cleanup` finishes once it is gone.
			f.seenLocked(err)
			f.keptJournal = f.Journal.Path
		}
	} else {
		f.Journal.Close()
		f.keptJournal = f.Journal.Path
	}
	f.Journal = nil
}

// JournalPathOrKept is the run's journal file, kept for `cleanup`.
func (f *FileSystem) JournalPathOrKept() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keptJournal
}

// RootNow is where the root dir the run opened is now: the path of its
// descriptor (the kernel follows renames), "" when it was never opened.
func (f *FileSystem) RootNow() string {
	f.mu.Lock()
	fd := f.rootfd
	f.mu.Unlock()
	if fd <= 0 {
		return ""
	}
	// Still the same directory at its path (however the path is spelt,
	// through a symlinked parent too): not moved.
	var atFD, atPath unix.Stat_t
	if unix.Fstat(fd, &atFD) == nil && unix.Stat(f.root, &atPath) == nil && atFD.Dev == atPath.Dev && atFD.Ino == atPath.Ino {
		return filepath.Clean(f.root)
	}
	now, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return ""
	}
	return now
}

// RemoveEmptyMountPath removes what the driver made at a path the
// simulator handed it, once its leftover mount is gone, as the kubelet's
// removeMountDir does for a publish target: an empty directory (rmdir),
// or the empty file a block publish binds its device onto. Anything with
// content stays.
func (f *FileSystem) RemoveEmptyMountPath(p string) {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
	case fi.IsDir():
		_ = f.RemoveAt(p, true)
	case fi.Mode().IsRegular() && fi.Size() == 0:
		if mnt, err := IsMountPoint(p); err == nil && !mnt {
			_ = f.RemoveAt(p, false)
		}
	}
}

// UnmountAll unmounts what is stacked at p, a path mountinfo gives (a
// real path), after checking that no directory on the way has become a
// symlink since: umount(2) resolves the path again. The error is the
// first failure (none when nothing more is mounted there).
func (f *FileSystem) UnmountAll(p string) error {
	if err := f.CheckPath(filepath.Dir(p)); err != nil {
		return fmt.Errorf("unmount %s: %w", p, err)
	}
	for range 16 {
		if err := unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("unmount %s: %w", p, err)
			}
			return nil
		}
	}
	return nil
}

// RestoreLock gives the root dir's lock up as it was before it was taken.
func (f *FileSystem) RestoreLock() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Lock.Restore()
	f.Lock = nil
}
