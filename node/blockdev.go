package node

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	mount "k8s.io/mount-utils"
)

// The kubelet's block volume path handler (pkg/volume/util/volumepathhandler):
// the loop device that keeps a pod's device open, and the bind mount of the
// published device.

// attachFileDevice is VolumePathHandler.AttachFileDevice: the loop device
// backed by path, made with losetup when there is none.
func attachFileDevice(path string) (string, error) {
	if dev, err := loopDeviceFor(path); err == nil {
		return dev, nil
	}
	if out, err := exec.Command("losetup", "-f", path).CombinedOutput(); err != nil {
		return "", fmt.Errorf("makeLoopDevice failed for path %s: losetup -f %s failed: %v: %s", path, path, err, strings.TrimSpace(string(out)))
	}
	return loopDeviceFor(path)
}

// detachFileDevice is VolumePathHandler.DetachFileDevice.
func detachFileDevice(path string) error {
	dev, err := loopDeviceFor(path)
	if err != nil {
		return nil
	}
	// losetup -d on a loop device that another process has open for a
	// moment (a concurrent losetup scanning devices, a udev probe) only
	// marks it autoclear, and a close racing with that mark can leave the
	// device bound for good, holding the map file open so that its unmount
	// fails with "target is busy". The kubelet's reconciler would try
	// again on its next pass; the simulator detaches again until the
	// device lets go, for up to 2s.
	for range 20 {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			if _, gone := loopDeviceFor(path); gone != nil {
				return nil
			}
			return fmt.Errorf("removeLoopDevice failed for path %s: %v: %s", path, err, strings.TrimSpace(string(out)))
		}
		if _, err := loopDeviceFor(path); err != nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// loopDeviceFor is getLoopDeviceFromSysfs: the loop device whose backing
// file is path.
func loopDeviceFor(path string) (string, error) {
	real, _ := filepath.EvalSymlinks(path)
	devices, _ := filepath.Glob("/sys/block/loop*")
	for _, d := range devices {
		b, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
		if err != nil {
			continue
		}
		backing := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if backing == path || backing == real {
			return "/dev/" + filepath.Base(d), nil
		}
	}
	return "", errors.New("device not found")
}

// unmapBindMountDevice is VolumePathHandler's: the kubelet unmounts the
// per-pod map file only when it is a device node (a driver that published a
// regular file leaves a bind mount the kubelet cannot remove, and the
// kubelet then retries forever without calling NodeUnpublishVolume).
func (f *fileSystem) unmapBindMountDevice(linkPath string) error {
	fi, err := os.Lstat(linkPath)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to Lstat file %s: %v", linkPath, err)
	}
	if fi.Mode()&os.ModeDevice != 0 {
		// mount.New(""), as the kubelet's volumepathhandler: its probed
		// not-mounted behaviour decides what an unmount that finds nothing
		// mounted returns, so this call needs its settings.
		if err := mount.New("").Unmount(linkPath); err != nil {
			return fmt.Errorf("failed to unmount linkPath %s: %v", linkPath, err)
		}
	}
	if err := f.removeAt(linkPath, false); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("failed to remove file %s: %v", linkPath, err)
	}
	return nil
}

// isMountPoint reads the mount table only, which needs none of a
// mounter's settings: mount.New("") would fork and exec `umount` on every
// call to probe its not-mounted behaviour (fs.go's newFileSystem says the
// same), and cleanup asks this for every path it removes.
func isMountPoint(p string) (bool, error) {
	return (&mount.Mounter{}).IsMountPoint(p)
}
