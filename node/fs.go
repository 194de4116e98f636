package node

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	mount "k8s.io/mount-utils"
)

// fileSystem makes the kubelet's changes to the root dir and records every
// directory and file it creates, the moment it creates it, in memory and in
// the run's journal (journal.go), so that whatever way a run ends, it can be
// undone, and so that nothing else is ever removed or unmounted.
type fileSystem struct {
	mu         sync.Mutex
	dirMu      sync.Mutex // held by mkdirAll
	root       string
	command    string
	created    []string
	owned      map[string]bool
	ownedDirs  map[string]bool   // the owned paths that are directories
	inFlight   map[string]string // adopted journals' unanswered driver calls, by path
	mountPaths map[string]bool
	// journalVolData: the vol_data.json copies of adopted journals (cleanup)
	journalVolData map[string]map[string]string
	kept           []string // volumes left in place after a failed teardown
	journal        *journal
	journalErr     error
	keptJournal    string
	mounter        mount.Interface
	rootfd         int       // the root dir, opened once (fsat.go)
	lock           *RootLock // the root dir's lock, released when the run leaves nothing
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

func newFileSystem(root string) *fileSystem {
	// The mounter is used for IsLikelyNotMountPoint and GetMountRefs only,
	// which need none of its settings: mount.New("") would fork and exec
	// `umount` at once to probe a behaviour of Unmount (mount-utils'
	// detectSafeNotMountedBehavior), a cost every run paid for nothing.
	return &fileSystem{root: root, owned: map[string]bool{}, ownedDirs: map[string]bool{}, inFlight: map[string]string{}, mountPaths: map[string]bool{},
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

// record appends r to the journal (f.mu held); it is synced by sync,
// after f.mu is released, before the action it announces.
func (f *fileSystem) record(r journalRecord) {
	if f.journal == nil && f.journalErr == nil {
		f.journal, f.journalErr = openJournal(f.root, f.command)
	}
	if f.journal != nil {
		if err := f.journal.write(r); err != nil && f.journalErr == nil {
			f.journalErr = err
		}
	}
}

// note records r and syncs it: the one way to journal an intent.
func (f *fileSystem) note(r journalRecord) {
	f.mu.Lock()
	f.record(r)
	j := f.journal
	f.mu.Unlock()
	j.sync()
}

func (f *fileSystem) remember(p string) { f.rememberKind(p, recordFile) }

func (f *fileSystem) rememberKind(p, kind string) {
	f.mu.Lock()
	f.rememberLocked(p, kind)
	j := f.journal
	f.mu.Unlock()
	j.sync()
}

// rememberLocked records p as made by the simulator (f.mu held).
func (f *fileSystem) rememberLocked(p, kind string) {
	if f.owned[p] {
		return
	}
	f.created = append(f.created, p)
	f.owned[p] = true
	if kind == recordDir {
		f.ownedDirs[p] = true
	} else {
		f.pendingFiles[p] = true
	}
	f.record(journalRecord{Kind: kind, Path: p})
}

// markMountPath records that p is, or is about to be, a mount point: a
// path handed to the driver (target, staging, block publish) or one the
// kubelet bind-mounts. Nothing inside such a path is ever deleted.
func (f *fileSystem) markMountPath(p string) {
	f.mu.Lock()
	if !f.mountPaths[p] {
		f.mountPaths[p] = true
		f.record(journalRecord{Kind: recordMount, Path: p})
	}
	j := f.journal
	f.mu.Unlock()
	j.sync()
}

// callStarted journals a driver call that may mount at p, before it is
// sent; callEnded its answer (whatever it was). The call is not to be
// sent when its intent could not be journaled (journalFailed).
func (f *fileSystem) callStarted(op, p string) error {
	f.note(journalRecord{Kind: recordCall, Op: op, Path: p})
	return f.journalFailed()
}

// journalFailed is the error of a journal that could not be opened or
// written (a full file system): from then on nothing more is made, and
// no driver call that mounts is sent, since a kill -9 would leave what
// cleanup cannot find.
func (f *fileSystem) journalFailed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.journalErr == nil {
		return nil
	}
	return fmt.Errorf("%w: nothing more is made or mounted without its journal record (cleanup could not finish it after a crash)", f.journalErr)
}

func (f *fileSystem) callEnded(op, p string) {
	f.note(journalRecord{Kind: recordCalled, Op: op, Path: p})
}

// callInFlight tells whether an adopted journal shows a driver call at p
// that was never answered: the driver may still be in it.
func (f *fileSystem) callInFlight(p string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op, ok := f.inFlight[p]
	return op, ok
}

func (f *fileSystem) isOwned(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.owned[p]
}

func (f *fileSystem) isOwnedDir(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ownedDirs[p]
}

// releaseLock drops the root dir's lock when the run leaves nothing.
func (f *fileSystem) releaseLock() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lock.Release()
	f.lock = nil
}

func (f *fileSystem) isMountPath(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mountPaths[p]
}

// adopt takes over what an earlier run's journal lists (`cleanup`).
// Only paths strictly inside the root dir are taken, and the root dir
// itself when the run made it (it goes only if empty): a journal is a file
// anyone with access to the root dir could edit, and `cleanup` must never
// be led to remove or unmount anything outside it.
//
// Each record is checked against what the simulator would have made
// (journalcheck.go); refuse is told of every one that is not.
func (f *fileSystem) adopt(jc *journalContents, refuse func(kind, p string, err error)) {
	// Where a journaled path crosses a symlink or a mount now, nothing of
	// it is taken, and the refusal is noted (exit code 2).
	f.mu.Lock()
	for p, kind := range jc.owned {
		if kind == recordDir {
			f.journaledDirs[p] = true
		}
	}
	f.mu.Unlock()
	inside := f.insideParentsCheck(jc, refuse)
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.names(jc, refuse)
	for _, p := range jc.order {
		kind := jc.owned[p]
		madeRoot := p == filepath.Clean(f.root) && kind == recordDir
		if !(madeRoot || inside(p)) || f.owned[p] {
			continue
		}
		if !madeRoot {
			err := f.derivedDir(p)
			if kind != recordDir {
				err = f.derivedFile(p, jc, n)
			}
			if err != nil {
				refuse(kind, p, err)
				continue
			}
		}
		f.owned[p] = true
		f.ownedDirs[p] = kind == recordDir
		f.created = append(f.created, p)
	}
	for p := range jc.mountPaths {
		if !inside(p) {
			continue
		}
		if err := f.derivedMount(p, n); err != nil {
			refuse(recordMount, p, err)
			continue
		}
		f.mountPaths[p] = true
		if op, ok := jc.inFlight[p]; ok {
			f.inFlight[p] = op
		}
	}
	for dir, data := range jc.volData {
		if data != nil && inside(dir) {
			f.journalVolData[dir] = data
		}
	}
}

// forgetVolumeData records that the volume in dir is done with (torn
// down, or its first SetUp failed): `cleanup` has nothing of it to rebuild.
func (f *fileSystem) forgetVolumeData(dir string) {
	f.note(journalRecord{Kind: recordVolData, Path: dir})
}

// journaledVolumeData returns the copies of vol_data.json that adopted
// journals hold, by directory, in a stable order.
func (f *fileSystem) journaledVolumeData() ([]string, map[string]map[string]string) {
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
func (f *fileSystem) insideParentsCheck(jc *journalContents, refuse func(kind, p string, err error)) func(string) bool {
	checked := map[string]error{}
	check := func(p string) {
		if !f.insideRoot(p) {
			return
		}
		d := filepath.Dir(p)
		if _, ok := checked[d]; ok {
			return
		}
		err := f.checkPath(d)
		checked[d] = err
		if IsSymlinkRefused(err) {
			refuse("path", d, err)
		}
	}
	for _, p := range jc.order {
		check(p)
	}
	for p := range jc.mountPaths {
		check(p)
	}
	for d := range jc.volData {
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
func (f *fileSystem) insideRoot(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && strings.HasPrefix(p, filepath.Clean(f.root)+"/")
}

// Created returns what was created, oldest first.
func (f *fileSystem) Created() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.created...)
}

// ownedUnder lists what the simulator created strictly below dir, deepest
// first, skipping everything below a mount path.
func (f *fileSystem) ownedUnder(dir string) []string {
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
func (f *fileSystem) belowMountPath(p string) bool {
	for d := filepath.Dir(p); d != "/" && d != "." && len(d) >= len(f.root); d = filepath.Dir(d) {
		if f.mountPaths[d] {
			return true
		}
	}
	return false
}

// mountRefs is the CSI plugin's GetDeviceMountRefs: other mount points of
// the same source as path.
func (f *fileSystem) mountRefs(path string) ([]string, error) {
	return f.mounter.GetMountRefs(path)
}

// keep marks a path to be left as it is by Cleanup: a volume whose
// teardown failed stays mounted with its files, for `cleanup` to finish
// through the driver.
func (f *fileSystem) keep(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.kept {
		if k == p {
			return
		}
	}
	f.kept = append(f.kept, p)
}

// isKept tells whether p is a kept path or lies inside one.
func (f *fileSystem) isKept(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.kept {
		if p == k || strings.HasPrefix(p, k+"/") {
			return true
		}
	}
	return false
}

func (f *fileSystem) keptPaths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.kept...)
}

// finish removes the journal when the run left nothing of its own, and
// keeps it (for `cleanup`) otherwise.
func (f *fileSystem) finish(clean bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.journal == nil {
		if clean {
			f.lock.Release()
			f.lock = nil
		}
		return
	}
	if clean {
		f.lock.Release()
		f.lock = nil
		if err := f.journal.remove(); err != nil {
			// Kept: a refusal (a mount over the journal dir) is told,
			// with the journal, and `cleanup` finishes once it is gone.
			f.seenLocked(err)
			f.keptJournal = f.journal.path
		}
	} else {
		f.journal.close()
		f.keptJournal = f.journal.path
	}
	f.journal = nil
}

// journalPathOrKept is the run's journal file, kept for `cleanup`.
func (f *fileSystem) journalPathOrKept() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keptJournal
}
