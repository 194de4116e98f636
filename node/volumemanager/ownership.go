package volumemanager

// ownership.go: the paths a volume owns in the root dir, kept for `cleanup`.

import (
	"path/filepath"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// keepVolume leaves a pod's volume as it is after its teardown failed:
// the mount, its directories and vol_data.json, and the volume's device,
// which the pod still holds. Nothing of it is removed; `cleanup` finishes
// it through the driver, as a restarted kubelet would.
func (k *VolumeManager) keepVolume(v *csiplugin.VolumeSpec, podUID string) {
	for _, p := range k.volumePaths(v, podUID) {
		k.FS.Keep(p)
	}
	k.keepDevice(v)
}

// keepDevice leaves a device (a staged volume) as it is after its unstage
// failed, or while a kept pod volume still uses it.
func (k *VolumeManager) keepDevice(v *csiplugin.VolumeSpec) {
	for _, p := range k.devicePaths(v) {
		k.FS.Keep(p)
	}
}

// volumePaths are the directories of a pod's volume: its mount or its
// block publish path, with its vol_data.json.
func (k *VolumeManager) volumePaths(v *csiplugin.VolumeSpec, podUID string) []string {
	if v.Block {
		return []string{filepath.Dir(k.Layout.BlockPublishPath(v.SpecName, podUID)), filepath.Join(k.Layout.PodDeviceMapPath(podUID), v.SpecName)}
	}
	return []string{k.Layout.PodVolumeDir(podUID, v.SpecName)}
}

// devicePaths are the directories of a staged volume: globalmount and
// its vol_data.json, or the block volume's staging and map paths.
func (k *VolumeManager) devicePaths(v *csiplugin.VolumeSpec) []string {
	switch {
	case v.Block:
		return []string{filepath.Dir(k.Layout.GlobalMapPath(v.SpecName)), k.Layout.BlockStagingPath(v.SpecName)}
	case v.Persistent():
		return []string{filepath.Dir(k.Layout.DeviceMountPath(v.Driver, v.Handle))}
	}
	return nil
}
