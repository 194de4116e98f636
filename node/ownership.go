package node

import (
	"fmt"
	"path/filepath"
)

// claimDir checks that a directory the kubelet is about to make for a pod
// or a volume is not someone else's; the error says whose it is not, and
// nothing is touched.
func (k *csiPlugin) claimDir(step, p string) error {
	if err := k.fs.Claim(p); err != nil {
		return &opError{kind: Transient, err: fmt.Errorf("%s: %w", step, err)}
	}
	return nil
}

// keepVolume leaves a pod's volume as it is after its teardown failed:
// the mount, its directories and vol_data.json, and the volume's device,
// which the pod still holds. Nothing of it is removed; `cleanup` finishes
// it through the driver, as a restarted kubelet would.
func (k *Kubelet) keepVolume(v *volumeSpec, podUID string) {
	for _, p := range k.volumePaths(v, podUID) {
		k.fs.Keep(p)
	}
	k.keepDevice(v)
}

// keepDevice leaves a device (a staged volume) as it is after its unstage
// failed, or while a kept pod volume still uses it.
func (k *Kubelet) keepDevice(v *volumeSpec) {
	for _, p := range k.devicePaths(v) {
		k.fs.Keep(p)
	}
}

// volumePaths are the directories of a pod's volume: its mount or its
// block publish path, with its vol_data.json.
func (k *Kubelet) volumePaths(v *volumeSpec, podUID string) []string {
	if v.Block {
		return []string{filepath.Dir(k.paths.BlockPublishPath(v.SpecName, podUID)), filepath.Join(k.paths.PodDeviceMapPath(podUID), v.SpecName)}
	}
	return []string{k.paths.PodVolumeDir(podUID, v.SpecName)}
}

// devicePaths are the directories of a staged volume: globalmount and
// its vol_data.json, or the block volume's staging and map paths.
func (k *Kubelet) devicePaths(v *volumeSpec) []string {
	switch {
	case v.Block:
		return []string{filepath.Dir(k.paths.GlobalMapPath(v.SpecName)), k.paths.BlockStagingPath(v.SpecName)}
	case v.persistent():
		return []string{filepath.Dir(k.paths.DeviceMountPath(v.Driver, v.Handle))}
	}
	return nil
}
