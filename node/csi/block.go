package csi

// block.go follows pkg/volume/csi/csi_block.go: SetUpDevice, MapPodDevice,
// UnmapPodDevice, TearDownDevice.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	mount "k8s.io/mount-utils"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// Block paths of csi_block.go and csi_util.go (docs/kubelet.md §1.4).

// NewBlockVolumeMapper is csiPlugin.NewBlockVolumeMapper: the data dir and
// its vol_data.json (no lifecycle mode, no SELinux key), written every time
// a mapper is made.
func (b *BlockMapper) NewBlockVolumeMapper(ctx context.Context, v *VolumeSpec) error {
	dataDir := b.Layout.BlockDataDir(v.SpecName)
	if err := b.ClaimDir("csi.NewBlockVolumeMapper", filepath.Dir(dataDir)); err != nil {
		return err
	}
	if err := b.FS.MkdirAll(dataDir, 0o750); err != nil {
		return errors.New(rootdir.PluginLog("failed to create data dir %s:  %v", dataDir, err))
	}
	data := map[string]string{
		"specVolID":    v.SpecName,
		"volumeHandle": v.Handle,
		"driverName":   v.Driver,
		"nodeName":     b.NodeName,
		"attachmentID": rootdir.AttachmentName(v.Handle, v.Driver, b.NodeName),
	}
	if err := b.FS.SaveVolumeData(dataDir, data); err != nil {
		return rootdir.WithCause(rootdir.PluginLog("csi.NewBlockVolumeMapper failed to save volume info data: %v", err), err)
	}
	b.Trace.Note(ctx, true, "wrote "+filepath.Join(dataDir, rootdir.VolDataFileName))
	return nil
}

// blockPublishContext is the GET of the VolumeAttachment in SetUpDevice and
// MapPodDevice: its attachmentMetadata, or {} when attach is skipped.
func (b *BlockMapper) blockPublishContext(ctx context.Context, v *VolumeSpec, op string) (map[string]string, error) {
	if !b.AttachRequired(v.Driver) {
		return map[string]string{}, nil
	}
	name := rootdir.AttachmentName(v.Handle, v.Driver, b.NodeName)
	va, ok := b.Cluster.VolumeAttachment(name)
	if !ok {
		return nil, Transientf("%s", rootdir.PluginLog("blockMapper.%s failed to get volume attachment [id=%v]: volumeattachments.storage.k8s.io %q not found", op, name, name))
	}
	b.Trace.Note(ctx, true, "publish_context: GET VolumeAttachment "+name)
	meta := copyMap(va.Status.AttachmentMetadata)
	if meta == nil {
		meta = map[string]string{}
	}
	return meta, nil
}

// SetUpDevice is csiBlockMapper.SetUpDevice and stageVolumeForBlock. It
// returns the staging path when it staged ("" for a driver without
// STAGE_UNSTAGE_VOLUME), which the expansion after the map then sends.
func (b *BlockMapper) SetUpDevice(ctx context.Context, v *VolumeSpec) (string, error) {
	publishContext, err := b.blockPublishContext(ctx, v, "SetupDevice")
	if err != nil {
		return "", err
	}
	if err := b.DriverRegistered(v.Driver); err != nil {
		return "", Transientf("%s", rootdir.PluginLog("blockMapper.SetUpDevice failed to get CSI client: %v", err))
	}
	stagingPath := b.Layout.BlockStagingPath(v.SpecName)
	stage, err := b.NodeSupports(ctx, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return "", errors.New(rootdir.PluginLog("blockMapper.stageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability: %v", err))
	}
	if !stage {
		b.Trace.Note(ctx, false, "driver has no STAGE_UNSTAGE_VOLUME: no NodeStageVolume, and no staging directory")
		return "", nil
	}
	secrets := map[string]string{}
	if ref := v.StageSecretRef; ref != nil {
		if secrets, err = b.CredentialsFromSecret(ref); err != nil {
			return "", Transientf("%s", rootdir.PluginLog("failed to get NodeStageSecretRef %s/%s: %v", ref.Namespace, ref.Name, err))
		}
	}
	if err := b.ClaimDir("blockMapper.stageVolumeForBlock", stagingPath); err != nil {
		return "", err
	}
	b.FS.MarkMountPath(stagingPath)
	if err := b.FS.MkdirAll(stagingPath, 0o750); err != nil {
		return "", errors.New(rootdir.PluginLog("blockMapper.stageVolumeForBlock failed to create dir %s: %v", stagingPath, err))
	}
	b.Trace.Note(ctx, true, "mkdir "+stagingPath+" (0750)")
	err = b.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    publishContext,
		StagingTargetPath: stagingPath,
		Secrets:           secrets,
		VolumeContext:     copyMap(v.Attributes),
	}, v.AccessMode(), FsTypeBlockName, nil, nil)
	if err != nil {
		if KindOf(err) == Final {
			b.cleanupOrphanDeviceFiles(ctx, v)
		}
		return "", err
	}
	return stagingPath, nil
}

// MapPodDevice is csiBlockMapper.MapPodDevice and publishVolumeForBlock:
// pod info without tokens (the block path has none), and the staging path
// always, even for drivers that do not stage.
func (b *BlockMapper) MapPodDevice(ctx context.Context, pod *corev1.Pod, v *VolumeSpec) (string, error) {
	publishContext, err := b.blockPublishContext(ctx, v, "MapPodDevice")
	if err != nil {
		return "", err
	}
	if err := b.DriverRegistered(v.Driver); err != nil {
		return "", Transientf("%s", rootdir.PluginLog("blockMapper.MapPodDevice failed to get CSI client: %v", err))
	}
	volumeContext := copyMap(v.Attributes)
	if d, ok := b.Cluster.CSIDriver(v.Driver); ok && d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount {
		volumeContext = MergeMap(volumeContext, podInfoAttrs(pod, storagev1.VolumeLifecyclePersistent))
	}
	secrets := map[string]string{}
	if ref := v.PublishSecretRef; ref != nil {
		if secrets, err = b.CredentialsFromSecret(ref); err != nil {
			return "", Transientf("%s", rootdir.PluginLog("blockMapper.publishVolumeForBlock failed to get NodePublishSecretRef %s/%s: %v", ref.Namespace, ref.Name, err))
		}
	}
	publishPath := b.Layout.BlockPublishPath(v.SpecName, string(pod.UID))
	if err := b.ClaimDir("blockMapper.publishVolumeForBlock", filepath.Dir(publishPath)); err != nil {
		return "", err
	}
	b.FS.MarkMountPath(publishPath)
	if err := b.FS.MkdirAll(filepath.Dir(publishPath), 0o750); err != nil {
		return "", errors.New(rootdir.PluginLog("blockMapper.publishVolumeForBlock failed to create dir %s:  %v", filepath.Dir(publishPath), err))
	}
	b.Trace.Note(ctx, true, "mkdir "+filepath.Dir(publishPath)+" (0750); the device file itself is left to the driver")
	err = b.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    publishContext,
		StagingTargetPath: b.Layout.BlockStagingPath(v.SpecName),
		TargetPath:        publishPath,
		Readonly:          v.ReadOnly,
		Secrets:           secrets,
		VolumeContext:     volumeContext,
	}, v.AccessMode(), FsTypeBlockName, []string{}, nil)
	return publishPath, err
}

// MapBlockVolume is util.MapBlockVolume: a bind mount of the published
// device at <globalMapPath>/<podUID>, a symlink to it in the pod's
// volumeDevices dir, and a loop device over the bind mount that keeps the
// device open while the pod runs.
func (b *BlockMapper) MapBlockVolume(ctx context.Context, pod *corev1.Pod, v *VolumeSpec, devicePath string) error {
	globalMapPath := b.Layout.GlobalMapPath(v.SpecName)
	podMapPath := b.Layout.PodDeviceMapPath(string(pod.UID))
	if b.DryRun {
		b.Trace.Note(ctx, false, fmt.Sprintf("the kubelet would bind-mount %s at %s/%s, link %s/%s to it, and hold a loop device on it", devicePath, globalMapPath, pod.UID, podMapPath, v.SpecName))
		return nil
	}
	linkPath := filepath.Join(globalMapPath, string(pod.UID))
	// The device is bound from the path the driver published it at, when
	// that is the simulator's (a symlink or a mount swapped in over its
	// dir since would bind another file).
	if pub := b.Layout.BlockPublishPath(v.SpecName, string(pod.UID)); devicePath == pub {
		if err := b.FS.CheckPath(filepath.Dir(pub)); err != nil {
			return err
		}
	}
	if err := b.FS.MkdirAll(globalMapPath, 0o750); err != nil {
		return fmt.Errorf("blkUtil.MapDevice failed. devicePath: %s, globalMapPath:%s, podUID: %s, bindMount: %v: %v", devicePath, globalMapPath, pod.UID, true, err)
	}
	b.FS.MarkMountPath(linkPath)
	fi, err := os.Stat(linkPath)
	switch {
	case os.IsNotExist(err):
		b.FS.Remember(linkPath)
		f, err := b.FS.CreateAt(linkPath, 0o750)
		if err != nil {
			return fmt.Errorf("blkUtil.MapDevice failed: failed to open file %s: %w", linkPath, err)
		}
		f.Close()
	case err != nil:
		return fmt.Errorf("blkUtil.MapDevice failed: failed to stat file %s: %v", linkPath, err)
	}
	// mapBindMountDevice: a device node already there is the bind mount of
	// an earlier map (a republish), so the kubelet skips the mount.
	if err == nil && fi.Mode()&os.ModeDevice != 0 {
		b.Trace.Note(ctx, true, fmt.Sprintf("bind mount of %s at %s already there (device node): map skipped", devicePath, linkPath))
	} else {
		// mount.New(""), as the kubelet's volumepathhandler
		// (mapBindMountDevice): the bind mount runs in a systemd scope
		// where systemd runs, a setting of that mounter.
		if err := mount.New("").Mount(devicePath, linkPath, "", []string{"bind"}); err != nil {
			return fmt.Errorf("blkUtil.MapDevice failed. devicePath: %s, globalMapPath:%s, podUID: %s, bindMount: %v: failed to bind mount devicePath: %s to linkPath %s: %v", devicePath, globalMapPath, pod.UID, true, devicePath, linkPath, err)
		}
		b.Trace.Note(ctx, false, fmt.Sprintf("bind-mounted %s at %s", devicePath, linkPath))
	}
	if err := b.FS.MkdirAll(podMapPath, 0o750); err != nil {
		return err
	}
	symlink := filepath.Join(podMapPath, v.SpecName)
	_ = b.FS.RemoveAt(symlink, false)
	b.FS.Remember(symlink)
	if err := b.FS.SymlinkInRoot(devicePath, symlink); err != nil {
		return fmt.Errorf("blkUtil.MapDevice failed. devicePath: %s, podVolumeMapPath:%s, volumeMapName: %s, bindMount: %v: %w", devicePath, podMapPath, v.SpecName, false, err)
	}
	b.Trace.Note(ctx, true, fmt.Sprintf("linked %s -> %s", symlink, devicePath))
	loop, err := rootdir.AttachFileDevice(linkPath)
	if err != nil {
		return fmt.Errorf("blkUtil.AttachFileDevice failed. globalMapPath:%s, podUID: %s: %v", globalMapPath, pod.UID, err)
	}
	b.Trace.Note(ctx, false, fmt.Sprintf("loop device %s holds %s open", loop, linkPath))
	return nil
}

// UnmapVolume is GenerateUnmapVolumeFunc: UnmapBlockVolume (loop device,
// symlink, bind mount), then UnmapPodDevice (NodeUnpublishVolume).
func (b *BlockMapper) UnmapVolume(ctx context.Context, pod *corev1.Pod, v *VolumeSpec) error {
	globalMapPath := b.Layout.GlobalMapPath(v.SpecName)
	linkPath := filepath.Join(globalMapPath, string(pod.UID))
	publishPath := b.Layout.BlockPublishPath(v.SpecName, string(pod.UID))
	// Nothing is unmounted, removed or handed to the driver through a
	// symlink or a mount swapped in on the way since the map.
	for _, d := range []string{globalMapPath, b.Layout.PodDeviceMapPath(string(pod.UID)), filepath.Dir(publishPath)} {
		if err := b.FS.CheckPath(d); err != nil {
			return &prefixedError{"UnmapVolume.UnmapBlockVolume failed", err}
		}
	}
	if !b.DryRun {
		if err := rootdir.DetachFileDevice(linkPath); err != nil {
			return &prefixedError{"UnmapVolume.UnmapBlockVolume failed", fmt.Errorf("blkUtil.DetachFileDevice failed. globalUnmapPath:%s, podUID: %s: %v", globalMapPath, pod.UID, err)}
		}
		symlink := filepath.Join(b.Layout.PodDeviceMapPath(string(pod.UID)), v.SpecName)
		if fi, err := os.Lstat(symlink); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			_ = b.FS.RemoveAt(symlink, false)
		}
		if err := b.FS.UnmapBindMountDevice(linkPath); err != nil {
			return &prefixedError{"UnmapVolume.UnmapBlockVolume failed", fmt.Errorf("blkUtil.DetachFileDevice failed. globalUnmapPath:%s, podUID: %s, bindMount: %v: %v", globalMapPath, pod.UID, true, err)}
		}
	}
	if err := b.DriverRegistered(v.Driver); err != nil {
		return Transientf("%s", rootdir.PluginLog("blockMapper.UnmapPodDevice failed to get CSI client: %v", err))
	}
	if _, err := b.NodeClient.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.Handle, TargetPath: publishPath}); err != nil {
		return rootdir.WithCause(rootdir.PluginLog("blockMapper.unpublishVolumeForBlock failed: %v", err), err)
	}
	return nil
}

// UnmapDevice is GenerateUnmapDeviceFunc and csiBlockMapper.TearDownDevice:
// NodeUnstage only when the staging path still exists, then the orphan
// device files and the global map path go.
func (b *BlockMapper) UnmapDevice(ctx context.Context, v *VolumeSpec) error {
	if err := b.DriverRegistered(v.Driver); err != nil {
		return Transientf("%s", rootdir.PluginLog("blockMapper.TearDownDevice failed to get CSI client: %v", err))
	}
	stagingPath := b.Layout.BlockStagingPath(v.SpecName)
	for _, d := range []string{filepath.Dir(stagingPath), b.Layout.GlobalMapPath(v.SpecName)} {
		if err := b.FS.CheckPath(d); err != nil {
			return err
		}
	}
	if _, err := os.Stat(stagingPath); err == nil {
		stage, err := b.NodeSupports(ctx, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
		if err != nil {
			return errors.New(rootdir.PluginLog("blockMapper.unstageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability: %v", err))
		}
		if stage {
			if err := b.NodeUnstageVolume(ctx, v.Handle, stagingPath); err != nil {
				return rootdir.WithCause(rootdir.PluginLog("blockMapper.unstageVolumeForBlock failed: %v", err), err)
			}
			if _, err := b.FS.RemoveOwnedTree(stagingPath); err != nil {
				return errors.New(rootdir.PluginLog("blockMapper.unstageVolumeForBlock failed to remove staging path after NodeUnstageVolume() error [%s]: %v", stagingPath, err))
			}
		}
	} else if os.IsNotExist(err) {
		b.Trace.Note(ctx, false, "block staging path does not exist: no NodeUnstageVolume")
	} else {
		return err
	}
	b.cleanupOrphanDeviceFiles(ctx, v)
	if _, err := b.FS.RemoveOwnedTree(b.Layout.GlobalMapPath(v.SpecName)); err != nil {
		return fmt.Errorf("failed to remove directory %s: %v", b.Layout.GlobalMapPath(v.SpecName), err)
	}
	return nil
}

// cleanupOrphanDeviceFiles removes the publish dir and the staging path if
// empty, then the volume's dir (data and dev) on one filesystem.
func (b *BlockMapper) cleanupOrphanDeviceFiles(ctx context.Context, v *VolumeSpec) {
	_ = b.FS.RemoveAt(filepath.Dir(b.Layout.BlockPublishPath(v.SpecName, "x")), true)
	_ = b.FS.RemoveAt(b.Layout.BlockStagingPath(v.SpecName), true)
	volumeDir := filepath.Dir(b.Layout.GlobalMapPath(v.SpecName))
	if mounted, _ := rootdir.IsMountPoint(volumeDir); !mounted {
		// The kubelet removes the whole tree; the simulator only what it made.
		if removed, _ := b.FS.RemoveOwnedTree(volumeDir); len(removed) > 0 {
			b.Trace.Note(ctx, true, "removed "+volumeDir)
		}
	}
}
