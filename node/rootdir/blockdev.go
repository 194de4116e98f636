package rootdir

// blockdev.go follows pkg/volume/util/volumepathhandler
// (volume_path_handler_linux.go): AttachFileDevice, DetachFileDevice.

import (
	"errors"
	"fmt"
	"os"
	"time"

	mount "k8s.io/mount-utils"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/internal/loopdev"
)

// The kubelet's block volume path handler (pkg/volume/util/volumepathhandler):
// the loop device that keeps a pod's device open, and the bind mount of the
// published device.

// AttachFileDevice is VolumePathHandler.AttachFileDevice: the loop device
// backed by path, attached when there is none. The kubelet runs `losetup -f
// --show path`; the simulator does what losetup does (LOOP_CTL_GET_FREE,
// LOOP_CONFIGURE) on a descriptor of the device, so that it knows the device
// it attached by that descriptor rather than by a name another process may
// take in between (loopdev).
func AttachFileDevice(path string) (string, error) {
	if dev, err := loopDeviceFor(path); err == nil {
		return dev, nil
	}
	s, err := loopdev.Attach(path, false)
	if err != nil {
		return "", fmt.Errorf("makeLoopDevice failed for path %s: %v", path, err)
	}
	return s.Path(), nil
}

// DetachFileDevice is VolumePathHandler.DetachFileDevice.
func DetachFileDevice(path string) error {
	return detachFileDeviceWith(path, loopdev.DetachOptions{Tries: detachTries, Wait: detachWait})
}

// A loop device that another process has open for a moment (a udev probe,
// a losetup scanning devices) is only marked autoclear by LOOP_CLR_FD and
// goes on that process's close; its map file stays open meanwhile, so that
// its unmount would fail with "target is busy". The kubelet's reconciler
// would try again on its next pass; the simulator looks again until the
// device lets go, for up to detachTries*detachWait. Every look finds the
// device again by its backing file and checks it on an open descriptor
// before clearing it: the number of a device that went meanwhile may
// already be another process's (another pod's block volume), and `losetup
// -d` on the name found earlier would detach that one.
const (
	detachTries = 20
	detachWait  = 100 * time.Millisecond
)

// detachFileDeviceWith is detachFileDevice with its tries and test hooks.
func detachFileDeviceWith(path string, opt loopdev.DetachOptions) error {
	b, err := loopdev.Identify(path)
	if err != nil {
		// No file: no device can be backed by it (nor be ours).
		return nil
	}
	if _, err := loopdev.Detach(b, opt); err != nil {
		return fmt.Errorf("removeLoopDevice failed for path %s: %v", path, err)
	}
	return nil
}

// loopDeviceFor is getLoopDeviceFromSysfs: the loop device whose backing
// file is path, checked on the device's descriptor (loopdev.Find).
func loopDeviceFor(path string) (string, error) {
	b, err := loopdev.Identify(path)
	if err != nil {
		return "", err
	}
	devs, err := loopdev.Find(b)
	if err != nil {
		return "", err
	}
	if len(devs) == 0 {
		return "", errors.New("device not found")
	}
	return devs[0].Path(), nil
}

// UnmapBindMountDevice is VolumePathHandler's: the kubelet unmounts the
// per-pod map file only when it is a device node (a driver that published a
// regular file leaves a bind mount the kubelet cannot remove, and the
// kubelet then retries forever without calling NodeUnpublishVolume).
func (f *FileSystem) UnmapBindMountDevice(linkPath string) error {
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
	if err := f.RemoveAt(linkPath, false); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("failed to remove file %s: %v", linkPath, err)
	}
	return nil
}
