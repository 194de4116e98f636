package rootdir

// fsvolume.go follows pkg/volume/csi/csi_util.go (saveVolumeData,
// loadVolumeData) and csi_mounter.go (isDirMounted, removeMountDir).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Claim checks, before the kubelet builds a volume's or a pod's own
// directory, that the path is not someone else's: it must not exist, or
// be this run's (or an adopted run's).
func (f *FileSystem) Claim(p string) error {
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) || f.IsOwned(p) {
		return nil
	} else if err != nil {
		return err
	}
	return &InTheWayError{Path: p}
}

// MkdirAllWithPathCheck is filesystem.MkdirAllWithPathCheck: an existing
// non-directory at the path is an error.
func (f *FileSystem) MkdirAllWithPathCheck(p string, perm os.FileMode) error {
	if err := f.CheckPath(filepath.Dir(p)); err != nil {
		return err
	}
	if fi, err := os.Stat(p); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("path %v exists but is not a directory", p)
		}
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return f.MkdirAll(p, perm)
}

// SaveVolumeData is saveVolumeData in csi_util.go: os.Create and a JSON
// encoder over a map, so keys come out sorted with a trailing newline.
// A new file is made with O_EXCL; the simulator's own file (a mapper made
// again, a republish) is rewritten only once its descriptor shows it is
// still the file it made (rewriteAt): a hard link raced in at the path
// gets no foreign file overwritten.
func (f *FileSystem) SaveVolumeData(dir string, data map[string]string) error {
	if err := JournalRecordFits(dir, data); err != nil {
		return errors.New(PluginLog("failed to save volume data file %s: %v", filepath.Join(dir, VolDataFileName), err))
	}
	p := filepath.Join(dir, VolDataFileName)
	_, statErr := os.Lstat(p)
	if statErr == nil && !f.IsOwned(p) {
		return errors.New(PluginLog("failed to save volume data file %s: %v", p, &InTheWayError{Path: p}))
	}
	f.Remember(p)
	f.note(JournalRecord{Kind: RecordVolData, Path: dir, Data: data})
	if err := f.journalFailed(); err != nil {
		return err
	}
	var file *os.File
	var err error
	if statErr == nil {
		file, err = f.rewriteAt(p)
	} else {
		file, err = f.CreateAt(p, 0o644)
	}
	if IsSymlinkRefused(err) {
		return err
	}
	if errors.Is(err, os.ErrExist) {
		// Put there between the check and the create (a hard link to
		// another file, say): not the simulator's, never written.
		return f.Seen(&ForeignFileError{Path: p, Why: "it appeared there while the simulator was making it"})
	}
	if err != nil {
		return WithCause(PluginLog("failed to save volume data file %s: %v", p, err), err)
	}
	defer file.Close()
	if err := json.NewEncoder(file).Encode(data); err != nil {
		return WithCause(PluginLog("failed to save volume data file %s: %v", p, err), err)
	}
	return nil
}

// LoadVolumeData is loadVolumeData in csi_util.go, read from the root
// dir's descriptor: no symlink, no mount on the way (a directory mounted
// over the volume's would hand the teardown another volume's data).
func (f *FileSystem) LoadVolumeData(dir string) (map[string]string, error) {
	p := filepath.Join(dir, VolDataFileName)
	b, err := f.readAt(p)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, &os.PathError{Op: "open", Path: p, Err: unix.ENOENT}
		}
		return nil, err
	}
	var data map[string]string
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, errors.New(PluginLog("failed to parse volume data file %s: %v", p, err))
	}
	return data, nil
}

// isDirMounted is isDirMounted in csi_mounter.go: mount-utils'
// IsLikelyNotMountPoint, which compares the device of the directory with
// its parent's (a bind mount from the same filesystem looks unmounted to
// it, as it does to the kubelet).
func (f *FileSystem) isDirMounted(dir string) (bool, error) {
	notMnt, err := f.mounter.IsLikelyNotMountPoint(dir)
	if err != nil && !os.IsNotExist(err) {
		return false, err
	}
	return !notMnt, nil
}

// RemoveMountDir is removeMountDir in csi_mounter.go: when the directory is
// not a mount point, remove it (only if empty), the vol_data.json beside it,
// and their parent.
func (f *FileSystem) RemoveMountDir(mountPath string) ([]string, error) {
	mnt, err := f.isDirMounted(mountPath)
	if err != nil {
		return nil, err
	}
	if mnt {
		return nil, nil
	}
	var removed []string
	volPath := filepath.Dir(mountPath)
	dataFile := filepath.Join(volPath, VolDataFileName)
	for _, x := range []struct {
		p    string
		dir  bool
		what string
	}{{mountPath, true, "failed to remove dir [%s]: %v"}, {dataFile, false, "failed to delete volume data file [%s]: %v"}, {volPath, true, "failed to delete volume path [%s]: %v"}} {
		err := f.RemoveAt(x.p, x.dir)
		switch {
		case err == nil:
			removed = append(removed, x.p)
		case IsSymlinkRefused(err):
			return removed, err
		case !errors.Is(err, os.ErrNotExist):
			return removed, errors.New(PluginLog(x.what, x.p, err))
		}
	}
	return removed, nil
}

// RemoveOwnedTree is where the kubelet calls os.RemoveAll (a block
// volume's staging path and its device dirs). The simulator removes only
// what it created, deepest first, one level at a time, and never anything
// inside a mount point or a path that was one: what the driver left stays
// and is reported by Cleanup.
func (f *FileSystem) RemoveOwnedTree(p string) ([]string, error) {
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if mnt, _ := IsMountPoint(p); mnt {
		return nil, fmt.Errorf("%s is still a mount point: left as it is", p)
	}
	var removed []string
	for _, c := range f.ownedUnder(p) {
		if f.RemovePath(c) == nil {
			removed = append(removed, c)
		}
	}
	if !f.IsOwned(p) {
		return removed, nil
	}
	if err := f.RemovePath(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return removed, fmt.Errorf("remove %s: %w", p, err)
	}
	return append(removed, p), nil
}

// PluginLog prefixes a message as the CSI plugin's log() helper does.
func PluginLog(format string, a ...any) string {
	return "kubernetes.io/csi: " + fmt.Sprintf(format, a...)
}

// causeError is a message worded as the kubelet words it (the cause
// flattened with %v) that still unwraps to the cause, so that the command
// can tell the machine's errors (ENOSPC: exit 3) from the input's.
type causeError struct {
	msg   string
	cause error
}

func (e *causeError) Error() string { return e.msg }

func (e *causeError) Unwrap() error { return e.cause }

func WithCause(msg string, cause error) error { return &causeError{msg: msg, cause: cause} }
