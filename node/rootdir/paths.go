package rootdir

// paths.go follows pkg/kubelet/kubelet_getters.go (the pod and plugin dirs) and
// pkg/volume/csi: csi_attacher.go (the device mount path), csi_block.go (the
// block paths), csi_plugin.go (the names) and getAttachmentName.

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
)

// Names and files of the kubelet's CSI volume plugin (csi_plugin.go).
const (
	PluginName      = "kubernetes.io/csi"
	VolDataFileName = "vol_data.json"
	globalMountDir  = "globalmount"
)

// Paths builds the kubelet's directory layout under a root dir
// (pkg/kubelet/kubelet_getters.go, pkg/volume/csi).
type Paths struct {
	Root string
}

// EscapeQualifiedName is k8s.io/utils/strings.EscapeQualifiedName.
func EscapeQualifiedName(in string) string { return strings.ReplaceAll(in, "/", "~") }

// PodDir is <root>/pods/<uid>.
func (p Paths) PodDir(podUID string) string { return filepath.Join(p.Root, "pods", podUID) }

// PodVolumeDir is the directory holding vol_data.json and the mount dir of
// one volume of one pod: <root>/pods/<uid>/volumes/kubernetes.io~csi/<spec>.
func (p Paths) PodVolumeDir(podUID, specName string) string {
	return filepath.Join(p.PodDir(podUID), "volumes", EscapeQualifiedName(PluginName), EscapeQualifiedName(specName))
}

// TargetPath is NodePublish's target_path for a filesystem volume
// (getTargetPath in csi_mounter.go). specName is the PV name for a claim,
// the pod's volume name for an inline volume.
func (p Paths) TargetPath(podUID, specName string) string {
	return filepath.Join(p.PodVolumeDir(podUID, specName), "mount")
}

// DeviceMountPath is NodeStage's staging_target_path (makeDeviceMountPath
// in csi_attacher.go, 1.24+): the driver name unescaped and the SHA-256 of
// the volume handle.
func (p Paths) DeviceMountPath(driver, volumeHandle string) string {
	sum := sha256.Sum256([]byte(volumeHandle))
	return filepath.Join(p.PluginDir(), driver, fmt.Sprintf("%x", sum), globalMountDir)
}

// PluginDir is <root>/plugins/kubernetes.io/csi.
func (p Paths) PluginDir() string { return filepath.Join(p.Root, "plugins", PluginName) }

// RegistrationDir is where node-driver-registrar puts its socket.
func (p Paths) RegistrationDir() string { return filepath.Join(p.Root, "plugins_registry") }

// AttachmentName is the VolumeAttachment the kubelet reads for a volume
// (getAttachmentName in csi_attacher.go).
func AttachmentName(volumeHandle, driver, nodeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(volumeHandle+driver+nodeName)))
}

// InlineVolumeHandle is the handle of an ephemeral inline volume
// (makeVolumeHandle in csi_mounter.go).
func InlineVolumeHandle(podUID, podVolumeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(podUID+podVolumeName)))
}

// UniqueVolumeName is the kubelet's name for a PV volume in its caches and
// in node.status.volumesAttached (GetUniqueVolumeName, "^" separator).
func UniqueVolumeName(driver, volumeHandle string) string {
	return PluginName + "/" + driver + "^" + volumeHandle
}

// VolumeDevicesDir is <root>/plugins/kubernetes.io/csi/volumeDevices.
func (p Paths) VolumeDevicesDir() string { return filepath.Join(p.PluginDir(), "volumeDevices") }

// BlockStagingPath is NodeStage's staging_target_path for a block volume
// (no hashing).
func (p Paths) BlockStagingPath(specName string) string {
	return filepath.Join(p.VolumeDevicesDir(), "staging", specName)
}

// BlockDataDir holds the block vol_data.json.
func (p Paths) BlockDataDir(specName string) string {
	return filepath.Join(p.VolumeDevicesDir(), EscapeQualifiedName(specName), "data")
}

// PodDeviceMapPath is the directory of the pod's device symlinks.
func (p Paths) PodDeviceMapPath(podUID string) string {
	return filepath.Join(p.PodDir(podUID), "volumeDevices", EscapeQualifiedName(PluginName))
}

// BlockPublishPath is NodePublish's target_path for a block volume: a file
// the driver creates.
func (p Paths) BlockPublishPath(specName, podUID string) string {
	return filepath.Join(p.VolumeDevicesDir(), "publish", specName, podUID)
}

// GlobalMapPath is where the kubelet bind-mounts the published device per pod.
func (p Paths) GlobalMapPath(specName string) string {
	return filepath.Join(p.VolumeDevicesDir(), EscapeQualifiedName(specName), "dev")
}

// JournalDir is where a run writes down, under the root dir, every path it
// creates, the moment it creates it. It is how the simulator knows what is
// its own: on a real node the root dir holds the kubelet's and other
// programs' files and mounts, which the simulator never touches. After a
// crash or kill -9, `cleanup` reads the journal to finish the run's
// teardown; a later `run` finds it and refuses to start over it.
const JournalDir = ".csi-kubelet-sim"
