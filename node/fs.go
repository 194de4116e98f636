package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	mount "k8s.io/mount-utils"
)

// fileSystem makes the kubelet's changes to the root dir and remembers
// every directory and file it created, the moment it creates it, so that
// whatever way a run ends, it can be undone.
type fileSystem struct {
	mu      sync.Mutex
	created []string
	mounter mount.Interface
}

func newFileSystem() *fileSystem {
	return &fileSystem{mounter: mount.New("")}
}

func (f *fileSystem) remember(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, p)
}

// Created returns what was created, oldest first.
func (f *fileSystem) Created() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.created...)
}

// mkdirAll is os.MkdirAll that remembers each directory it makes.
func (f *fileSystem) mkdirAll(p string, perm os.FileMode) error {
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
		f.remember(missing[i])
	}
	return nil
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

// saveVolumeData is saveVolumeData in csi_util.go: os.Create and a JSON
// encoder over a map, so keys come out sorted with a trailing newline.
func (f *fileSystem) saveVolumeData(dir string, data map[string]string) error {
	p := filepath.Join(dir, volDataFileName)
	_, statErr := os.Lstat(p)
	file, err := os.Create(p)
	if err != nil {
		return errors.New(pluginLog("failed to save volume data file %s: %v", p, err))
	}
	defer file.Close()
	if errors.Is(statErr, os.ErrNotExist) {
		f.remember(p)
	}
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

// mountRefs is the CSI plugin's GetDeviceMountRefs: other mount points of
// the same source as path.
func (f *fileSystem) mountRefs(path string) ([]string, error) {
	return f.mounter.GetMountRefs(path)
}
