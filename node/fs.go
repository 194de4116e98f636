package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
	mountPaths map[string]bool
	// journalVolData: the vol_data.json copies of adopted journals (cleanup)
	journalVolData map[string]map[string]string
	kept           []string // volumes left in place after a failed teardown
	journal        *journal
	journalErr     error
	keptJournal    string
	mounter        mount.Interface
}

func newFileSystem(root string) *fileSystem {
	// The mounter is used for IsLikelyNotMountPoint and GetMountRefs only,
	// which need none of its settings: mount.New("") would fork and exec
	// `umount` at once to probe a behaviour of Unmount (mount-utils'
	// detectSafeNotMountedBehavior), a cost every run paid for nothing.
	return &fileSystem{root: root, owned: map[string]bool{}, mountPaths: map[string]bool{},
		journalVolData: map[string]map[string]string{}, mounter: &mount.Mounter{}}
}

// InTheWayError is a path the simulator needs to create that already
// exists and is not its own: another program's (on a real node, the real
// kubelet's) files, which the simulator does not touch.
type InTheWayError struct{ Path string }

func (e *InTheWayError) Error() string {
	return fmt.Sprintf("%s already exists and was not made by this simulator: it belongs to someone else (on a real node, perhaps the kubelet); the simulator does not touch it", e.Path)
}

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

func (f *fileSystem) remember(p string) { f.rememberKind(p, recordFile) }

func (f *fileSystem) rememberKind(p, kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.owned[p] {
		return
	}
	f.created = append(f.created, p)
	f.owned[p] = true
	f.record(journalRecord{Kind: kind, Path: p})
}

// markMountPath records that p is, or is about to be, a mount point: a
// path handed to the driver (target, staging, block publish) or one the
// kubelet bind-mounts. Nothing inside such a path is ever deleted.
func (f *fileSystem) markMountPath(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.mountPaths[p] {
		f.mountPaths[p] = true
		f.record(journalRecord{Kind: recordMount, Path: p})
	}
}

func (f *fileSystem) isOwned(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.owned[p]
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
func (f *fileSystem) adopt(jc *journalContents) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range jc.order {
		madeRoot := p == filepath.Clean(f.root) && jc.owned[p] == recordDir
		if (madeRoot || f.insideParents(p)) && !f.owned[p] {
			f.owned[p] = true
			f.created = append(f.created, p)
		}
	}
	for p := range jc.mountPaths {
		if f.insideParents(p) {
			f.mountPaths[p] = true
		}
	}
	for dir, data := range jc.volData {
		if data != nil && f.insideParents(dir) {
			f.journalVolData[dir] = data
		}
	}
}

// forgetVolumeData records that the volume in dir is done with (torn
// down, or its first SetUp failed): `cleanup` has nothing of it to rebuild.
func (f *fileSystem) forgetVolumeData(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(journalRecord{Kind: recordVolData, Path: dir})
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

// insideParents tells whether p is strictly below the root dir through
// plain directories only: since the journal was written, a directory on the
// way may have been replaced by a symlink to somewhere else, and nothing
// is removed or unmounted through one.
func (f *fileSystem) insideParents(p string) bool {
	return f.insideRoot(p) && f.noSymlinkBelowRoot(filepath.Dir(p)) == nil
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

// mkdirAll is os.MkdirAll that records each directory it makes. Volumes
// mounted side by side (load) make directories under the same parents at
// once; dirMu makes finding, creating and recording them one step, so that
// a parent is always recorded before its children: otherwise one goroutine
// could make a parent, another see it and record a child first, and the
// clean-up (newest first) would try the parent before the child and leave
// it behind.
func (f *fileSystem) mkdirAll(p string, perm os.FileMode) error {
	f.dirMu.Lock()
	defer f.dirMu.Unlock()
	var missing []string
	for d := filepath.Clean(p); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], perm); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		f.rememberKind(missing[i], recordDir)
	}
	return nil
}

// claim checks, before the kubelet builds a volume's or a pod's own
// directory, that the path is not someone else's: it must not exist, or
// be this run's (or an adopted run's).
func (f *fileSystem) claim(p string) error {
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) || f.isOwned(p) {
		return nil
	} else if err != nil {
		return err
	}
	return &InTheWayError{Path: p}
}

// mkdirAllWithPathCheck is filesystem.MkdirAllWithPathCheck: an existing
// non-directory at the path is an error.
func (f *fileSystem) mkdirAllWithPathCheck(p string, perm os.FileMode) error {
	if fi, err := os.Stat(p); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("path %v exists but is not a directory", p)
		}
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return f.mkdirAll(p, perm)
}

// noSymlinkBelowRoot tells whether every existing component of p below
// the root dir is a plain directory: a path rebuilt from a journal (which
// anyone with access to the root dir could have prepared) must not lead
// the simulator to write through a symlink to somewhere else.
func (f *fileSystem) noSymlinkBelowRoot(p string) error {
	if p == filepath.Clean(f.root) {
		return nil
	}
	if !f.insideRoot(p) {
		return fmt.Errorf("%s is not inside the root dir %s", p, f.root)
	}
	rel, _ := filepath.Rel(filepath.Clean(f.root), p)
	cur := filepath.Clean(f.root)
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory (%s)", cur, fi.Mode().Type())
		}
	}
	return nil
}

// saveVolumeData is saveVolumeData in csi_util.go: os.Create and a JSON
// encoder over a map, so keys come out sorted with a trailing newline.
func (f *fileSystem) saveVolumeData(dir string, data map[string]string) error {
	p := filepath.Join(dir, volDataFileName)
	_, statErr := os.Lstat(p)
	if statErr == nil && !f.isOwned(p) {
		return errors.New(pluginLog("failed to save volume data file %s: %v", p, &InTheWayError{Path: p}))
	}
	f.remember(p)
	f.mu.Lock()
	f.record(journalRecord{Kind: recordVolData, Path: dir, Data: data})
	f.mu.Unlock()
	file, err := os.Create(p)
	if err != nil {
		return errors.New(pluginLog("failed to save volume data file %s: %v", p, err))
	}
	defer file.Close()
	if err := json.NewEncoder(file).Encode(data); err != nil {
		return errors.New(pluginLog("failed to save volume data file %s: %v", p, err))
	}
	return nil
}

// loadVolumeData is loadVolumeData in csi_util.go.
func loadVolumeData(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, volDataFileName))
	if err != nil {
		return nil, err
	}
	var data map[string]string
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, errors.New(pluginLog("failed to parse volume data file %s: %v", filepath.Join(dir, volDataFileName), err))
	}
	return data, nil
}

// isDirMounted is isDirMounted in csi_mounter.go: mount-utils'
// IsLikelyNotMountPoint, which compares the device of the directory with
// its parent's (a bind mount from the same filesystem looks unmounted to
// it, as it does to the kubelet).
func (f *fileSystem) isDirMounted(dir string) (bool, error) {
	notMnt, err := f.mounter.IsLikelyNotMountPoint(dir)
	if err != nil && !os.IsNotExist(err) {
		return false, err
	}
	return !notMnt, nil
}

// removeMountDir is removeMountDir in csi_mounter.go: when the directory is
// not a mount point, remove it (only if empty), the vol_data.json beside it,
// and their parent.
func (f *fileSystem) removeMountDir(mountPath string) ([]string, error) {
	mnt, err := f.isDirMounted(mountPath)
	if err != nil {
		return nil, err
	}
	if mnt {
		return nil, nil
	}
	var removed []string
	if err := os.Remove(mountPath); err == nil {
		removed = append(removed, mountPath)
	} else if !os.IsNotExist(err) {
		return removed, errors.New(pluginLog("failed to remove dir [%s]: %v", mountPath, err))
	}
	volPath := filepath.Dir(mountPath)
	dataFile := filepath.Join(volPath, volDataFileName)
	if err := os.Remove(dataFile); err == nil {
		removed = append(removed, dataFile)
	} else if !os.IsNotExist(err) {
		return removed, errors.New(pluginLog("failed to delete volume data file [%s]: %v", dataFile, err))
	}
	if err := os.Remove(volPath); err == nil {
		removed = append(removed, volPath)
	} else if !os.IsNotExist(err) {
		return removed, errors.New(pluginLog("failed to delete volume path [%s]: %v", volPath, err))
	}
	return removed, nil
}

// removeOwnedTree is where the kubelet calls os.RemoveAll (a block
// volume's staging path and its device dirs). The simulator removes only
// what it created, deepest first, one level at a time, and never anything
// inside a mount point or a path that was one: what the driver left stays
// and is reported by Cleanup.
func (f *fileSystem) removeOwnedTree(p string) ([]string, error) {
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if mnt, _ := isMountPoint(p); mnt {
		return nil, fmt.Errorf("%s is still a mount point: left as it is", p)
	}
	var removed []string
	for _, c := range f.ownedUnder(p) {
		if os.Remove(c) == nil {
			removed = append(removed, c)
		}
	}
	if !f.isOwned(p) {
		return removed, nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return removed, fmt.Errorf("remove %s: %w", p, err)
	}
	return append(removed, p), nil
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
		return
	}
	if clean {
		f.journal.remove()
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
