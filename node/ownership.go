package node

import (
	"fmt"
	"path/filepath"
)

// claimDir checks that a directory the kubelet is about to make for a pod
// or a volume is not someone else's; the error says whose it is not, and
// nothing is touched.
func (k *csiPlugin) claimDir(step, p string) error {
	if err := k.fs.claim(p); err != nil {
		return &opError{kind: Transient, err: fmt.Errorf("%s: %w", step, err)}
	}
	return nil
}

// keepVolume leaves a pod's volume as it is after its teardown failed:
// the mount, its directories and vol_data.json, and the volume's device,
// which the pod still holds. Nothing of it is removed; `cleanup` finishes
// it through the driver, as a restarted kubelet would.
func (k *Kubelet) keepVolume(v *volumeSpec, podUID string) {
	if v.Block {
		k.fs.keep(filepath.Dir(k.paths.BlockPublishPath(v.SpecName, podUID)))
		k.fs.keep(filepath.Join(k.paths.PodDeviceMapPath(podUID), v.SpecName))
	} else {
		k.fs.keep(k.paths.PodVolumeDir(podUID, v.SpecName))
	}
	k.keepDevice(v)
}

// keepDevice leaves a device (a staged volume) as it is after its unstage
// failed, or while a kept pod volume still uses it.
func (k *Kubelet) keepDevice(v *volumeSpec) {
	switch {
	case v.Block:
		k.fs.keep(filepath.Dir(k.paths.GlobalMapPath(v.SpecName)))
		k.fs.keep(k.paths.BlockStagingPath(v.SpecName))
	case v.persistent():
		k.fs.keep(filepath.Dir(k.paths.DeviceMountPath(v.Driver, v.Handle)))
	}
}
