package node

import (
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	mount "k8s.io/mount-utils"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// fsTypeBlockName is the fsType the CSI plugin uses internally for
// volumeMode: Block; the client sends a Block{} access type for it.
const fsTypeBlockName = "block"

// Block paths of csi_block.go and csi_util.go (docs/kubelet.md §1.4).

// newBlockVolumeMapper is csiPlugin.NewBlockVolumeMapper: the data dir and
// its vol_data.json (no lifecycle mode, no SELinux key), written every time
// a mapper is made.
func (b *csiBlockMapper) newBlockVolumeMapper(ctx context.Context, v *volumeSpec) error {
	dataDir := b.paths.BlockDataDir(v.SpecName)
	if err := b.claimDir("csi.NewBlockVolumeMapper", filepath.Dir(dataDir)); err != nil {
		return err
	}
	if err := b.fs.MkdirAll(dataDir, 0o750); err != nil {
		return errors.New(rootdir.PluginLog("failed to create data dir %s:  %v", dataDir, err))
	}
	data := map[string]string{
		"specVolID":    v.SpecName,
		"volumeHandle": v.Handle,
		"driverName":   v.Driver,
		"nodeName":     b.cfg.NodeName,
		"attachmentID": rootdir.AttachmentName(v.Handle, v.Driver, b.cfg.NodeName),
	}
	if err := b.fs.SaveVolumeData(dataDir, data); err != nil {
		return rootdir.WithCause(rootdir.PluginLog("csi.NewBlockVolumeMapper failed to save volume info data: %v", err), err)
	}
	b.trace.Note(ctx, true, "wrote "+filepath.Join(dataDir, rootdir.VolDataFileName))
	return nil
}

// mapVolume is GenerateMapVolumeFunc: ReadWriteOncePod check, the mapper,
// WaitForAttach, SetUpDevice (NodeStage) unless the device is globally
// mapped, MapPodDevice (NodePublish), the kubelet's own mapping of the
// published device (MapBlockVolume), and the expansion during mount. The
// same function runs again for each republish (round > 0): the reconciler's
// remount of a block volume is the whole map operation.
func (k *Kubelet) mapVolume(ctx context.Context, pod *corev1.Pod, v *volumeSpec, round int) error {
	unique := v.uniqueName(string(pod.UID))
	labels := csiclient.Labels{Component: "kubelet", Volume: v.SpecName, Pod: podName(pod)}
	op := func(name string) csiclient.Labels {
		l := labels
		l.Operation = name
		if round > 0 {
			l.Operation = fmt.Sprintf("%s#%d", name, round)
		}
		return l
	}
	fail := func(l csiclient.Labels, event string, err error) error {
		return k.volumeFailure(ctx, l, event, v, pod, err)
	}
	if k.state.mountedElsewhere(unique, string(pod.UID)) && len(v.PV.Spec.AccessModes) == 1 && v.PV.Spec.AccessModes[0] == corev1.ReadWriteOncePod {
		return fail(labels, "MapVolume.SetUpDevice", errors.New("volume uses the ReadWriteOncePod access mode and is already in use by another pod"))
	}
	if err := k.mapper.newBlockVolumeMapper(csiclient.WithLabels(ctx, labels), v); err != nil {
		return fail(labels, "MapVolume.NewBlockVolumeMapper initialization", err)
	}
	if k.attachRequired(v.Driver) {
		l := op("WaitForAttach")
		if err := k.waitForAttach(csiclient.WithLabels(ctx, l), v); err != nil {
			return fail(l, "MapVolume.WaitForAttach", &opError{kind: Transient, err: fmt.Errorf("%w%s", err, k.attachHint(pod))})
		}
	}
	// SetUpDevice's return value: the staging path when it staged.
	stagingPath := ""
	if !k.state.deviceMounted(unique) {
		l := op("SetUpDevice")
		octx, cancel := k.operationContext(ctx, l)
		staged, err := k.mapper.setUpDevice(octx, v)
		cancel()
		k.state.recordDevice(unique, v, err)
		if err != nil {
			return fail(l, "MapVolume.SetUpDevice", err)
		}
		stagingPath = staged
	}
	l := op("MapPodDevice")
	octx, cancel := k.operationContext(ctx, l)
	defer cancel()
	publishPath, err := k.mapper.mapPodDevice(octx, pod, v)
	k.state.recordMount(pod, unique, v, err)
	if err != nil {
		return fail(l, "MapVolume.MapPodDevice", err)
	}
	if err := k.mapper.mapBlockVolume(octx, pod, v, publishPath); err != nil {
		// After MapPodDevice a failure leaves the volume uncertain, so that
		// teardown still unpublishes it.
		k.state.recordMount(pod, unique, v, uncertain(err))
		return fail(l, "MapVolume.MapBlockVolume", err)
	}
	// EvalHostSymlinks: a driver may publish a symlink to its device.
	devicePath := publishPath
	if real, err := filepath.EvalSymlinks(publishPath); err == nil {
		devicePath = real
	}
	l = op("NodeExpand")
	ectx, ecancel := k.operationContext(ctx, l)
	defer ecancel()
	if err := k.expandDuringMount(ectx, pod, v, resizePaths{volumePath: devicePath, stagingPath: stagingPath}); err != nil {
		k.state.recordMount(pod, unique, v, uncertain(err))
		return k.volumeFailure(ctx, l, "MapVolume.MarkVolumeAsMounted failed while expanding volume", v, pod, err)
	}
	return nil
}

// blockPublishContext is the GET of the VolumeAttachment in SetUpDevice and
// MapPodDevice: its attachmentMetadata, or {} when attach is skipped.
func (b *csiBlockMapper) blockPublishContext(ctx context.Context, v *volumeSpec, op string) (map[string]string, error) {
	if !b.attachRequired(v.Driver) {
		return map[string]string{}, nil
	}
	name := rootdir.AttachmentName(v.Handle, v.Driver, b.cfg.NodeName)
	va, ok := b.cluster.VolumeAttachment(name)
	if !ok {
		return nil, transient("%s", rootdir.PluginLog("blockMapper.%s failed to get volume attachment [id=%v]: volumeattachments.storage.k8s.io %q not found", op, name, name))
	}
	b.trace.Note(ctx, true, "publish_context: GET VolumeAttachment "+name)
	meta := copyMap(va.Status.AttachmentMetadata)
	if meta == nil {
		meta = map[string]string{}
	}
	return meta, nil
}

// setUpDevice is csiBlockMapper.SetUpDevice and stageVolumeForBlock. It
// returns the staging path when it staged ("" for a driver without
// STAGE_UNSTAGE_VOLUME), which the expansion after the map then sends.
func (b *csiBlockMapper) setUpDevice(ctx context.Context, v *volumeSpec) (string, error) {
	publishContext, err := b.blockPublishContext(ctx, v, "SetupDevice")
	if err != nil {
		return "", err
	}
	if err := b.driverRegistered(v.Driver); err != nil {
		return "", transient("%s", rootdir.PluginLog("blockMapper.SetUpDevice failed to get CSI client: %v", err))
	}
	stagingPath := b.paths.BlockStagingPath(v.SpecName)
	stage, err := b.nodeSupports(ctx, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return "", errors.New(rootdir.PluginLog("blockMapper.stageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability: %v", err))
	}
	if !stage {
		b.trace.Note(ctx, false, "driver has no STAGE_UNSTAGE_VOLUME: no NodeStageVolume, and no staging directory")
		return "", nil
	}
	secrets := map[string]string{}
	if ref := v.StageSecretRef; ref != nil {
		if secrets, err = b.credentialsFromSecret(ref); err != nil {
			return "", transient("%s", rootdir.PluginLog("failed to get NodeStageSecretRef %s/%s: %v", ref.Namespace, ref.Name, err))
		}
	}
	if err := b.claimDir("blockMapper.stageVolumeForBlock", stagingPath); err != nil {
		return "", err
	}
	b.fs.MarkMountPath(stagingPath)
	if err := b.fs.MkdirAll(stagingPath, 0o750); err != nil {
		return "", errors.New(rootdir.PluginLog("blockMapper.stageVolumeForBlock failed to create dir %s: %v", stagingPath, err))
	}
	b.trace.Note(ctx, true, "mkdir "+stagingPath+" (0750)")
	err = b.nodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    publishContext,
		StagingTargetPath: stagingPath,
		Secrets:           secrets,
		VolumeContext:     copyMap(v.Attributes),
	}, v.accessMode(), fsTypeBlockName, nil, nil)
	if err != nil {
		if kindOf(err) == Final {
			b.cleanupOrphanDeviceFiles(ctx, v)
		}
		return "", err
	}
	return stagingPath, nil
}

// mapPodDevice is csiBlockMapper.MapPodDevice and publishVolumeForBlock:
// pod info without tokens (the block path has none), and the staging path
// always, even for drivers that do not stage.
func (b *csiBlockMapper) mapPodDevice(ctx context.Context, pod *corev1.Pod, v *volumeSpec) (string, error) {
	publishContext, err := b.blockPublishContext(ctx, v, "MapPodDevice")
	if err != nil {
		return "", err
	}
	if err := b.driverRegistered(v.Driver); err != nil {
		return "", transient("%s", rootdir.PluginLog("blockMapper.MapPodDevice failed to get CSI client: %v", err))
	}
	volumeContext := copyMap(v.Attributes)
	if d, ok := b.cluster.CSIDriver(v.Driver); ok && d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount {
		volumeContext = mergeMap(volumeContext, podInfoAttrs(pod, storagev1.VolumeLifecyclePersistent))
	}
	secrets := map[string]string{}
	if ref := v.PublishSecretRef; ref != nil {
		if secrets, err = b.credentialsFromSecret(ref); err != nil {
			return "", transient("%s", rootdir.PluginLog("blockMapper.publishVolumeForBlock failed to get NodePublishSecretRef %s/%s: %v", ref.Namespace, ref.Name, err))
		}
	}
	publishPath := b.paths.BlockPublishPath(v.SpecName, string(pod.UID))
	if err := b.claimDir("blockMapper.publishVolumeForBlock", filepath.Dir(publishPath)); err != nil {
		return "", err
	}
	b.fs.MarkMountPath(publishPath)
	if err := b.fs.MkdirAll(filepath.Dir(publishPath), 0o750); err != nil {
		return "", errors.New(rootdir.PluginLog("blockMapper.publishVolumeForBlock failed to create dir %s:  %v", filepath.Dir(publishPath), err))
	}
	b.trace.Note(ctx, true, "mkdir "+filepath.Dir(publishPath)+" (0750); the device file itself is left to the driver")
	err = b.nodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    publishContext,
		StagingTargetPath: b.paths.BlockStagingPath(v.SpecName),
		TargetPath:        publishPath,
		Readonly:          v.ReadOnly,
		Secrets:           secrets,
		VolumeContext:     volumeContext,
	}, v.accessMode(), fsTypeBlockName, []string{}, nil)
	return publishPath, err
}

// mapBlockVolume is util.MapBlockVolume: a bind mount of the published
// device at <globalMapPath>/<podUID>, a symlink to it in the pod's
// volumeDevices dir, and a loop device over the bind mount that keeps the
// device open while the pod runs.
func (b *csiBlockMapper) mapBlockVolume(ctx context.Context, pod *corev1.Pod, v *volumeSpec, devicePath string) error {
	globalMapPath := b.paths.GlobalMapPath(v.SpecName)
	podMapPath := b.paths.PodDeviceMapPath(string(pod.UID))
	if b.cfg.DryRun {
		b.trace.Note(ctx, false, fmt.Sprintf("the kubelet would bind-mount %s at %s/%s, link %s/%s to it, and hold a loop device on it", devicePath, globalMapPath, pod.UID, podMapPath, v.SpecName))
		return nil
	}
	linkPath := filepath.Join(globalMapPath, string(pod.UID))
	// The device is bound from the path the driver published it at, when
	// that is the simulator's (a symlink or a mount swapped in over its
	// dir since would bind another file).
	if pub := b.paths.BlockPublishPath(v.SpecName, string(pod.UID)); devicePath == pub {
		if err := b.fs.CheckPath(filepath.Dir(pub)); err != nil {
			return err
		}
	}
	if err := b.fs.MkdirAll(globalMapPath, 0o750); err != nil {
		return fmt.Errorf("blkUtil.MapDevice failed. devicePath: %s, globalMapPath:%s, podUID: %s, bindMount: %v: %v", devicePath, globalMapPath, pod.UID, true, err)
	}
	b.fs.MarkMountPath(linkPath)
	fi, err := os.Stat(linkPath)
	switch {
	case os.IsNotExist(err):
		b.fs.Remember(linkPath)
		f, err := b.fs.CreateAt(linkPath, 0o750)
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
		b.trace.Note(ctx, true, fmt.Sprintf("bind mount of %s at %s already there (device node): map skipped", devicePath, linkPath))
	} else {
		// mount.New(""), as the kubelet's volumepathhandler
		// (mapBindMountDevice): the bind mount runs in a systemd scope
		// where systemd runs, a setting of that mounter.
		if err := mount.New("").Mount(devicePath, linkPath, "", []string{"bind"}); err != nil {
			return fmt.Errorf("blkUtil.MapDevice failed. devicePath: %s, globalMapPath:%s, podUID: %s, bindMount: %v: failed to bind mount devicePath: %s to linkPath %s: %v", devicePath, globalMapPath, pod.UID, true, devicePath, linkPath, err)
		}
		b.trace.Note(ctx, false, fmt.Sprintf("bind-mounted %s at %s", devicePath, linkPath))
	}
	if err := b.fs.MkdirAll(podMapPath, 0o750); err != nil {
		return err
	}
	symlink := filepath.Join(podMapPath, v.SpecName)
	_ = b.fs.RemoveAt(symlink, false)
	b.fs.Remember(symlink)
	if err := b.fs.SymlinkInRoot(devicePath, symlink); err != nil {
		return fmt.Errorf("blkUtil.MapDevice failed. devicePath: %s, podVolumeMapPath:%s, volumeMapName: %s, bindMount: %v: %w", devicePath, podMapPath, v.SpecName, false, err)
	}
	b.trace.Note(ctx, true, fmt.Sprintf("linked %s -> %s", symlink, devicePath))
	loop, err := rootdir.AttachFileDevice(linkPath)
	if err != nil {
		return fmt.Errorf("blkUtil.AttachFileDevice failed. globalMapPath:%s, podUID: %s: %v", globalMapPath, pod.UID, err)
	}
	b.trace.Note(ctx, false, fmt.Sprintf("loop device %s holds %s open", loop, linkPath))
	return nil
}

// unmapVolume is GenerateUnmapVolumeFunc: UnmapBlockVolume (loop device,
// symlink, bind mount), then UnmapPodDevice (NodeUnpublishVolume).
func (b *csiBlockMapper) unmapVolume(ctx context.Context, pod *corev1.Pod, v *volumeSpec) error {
	globalMapPath := b.paths.GlobalMapPath(v.SpecName)
	linkPath := filepath.Join(globalMapPath, string(pod.UID))
	publishPath := b.paths.BlockPublishPath(v.SpecName, string(pod.UID))
	// Nothing is unmounted, removed or handed to the driver through a
	// symlink or a mount swapped in on the way since the map.
	for _, d := range []string{globalMapPath, b.paths.PodDeviceMapPath(string(pod.UID)), filepath.Dir(publishPath)} {
		if err := b.fs.CheckPath(d); err != nil {
			return &prefixedError{"UnmapVolume.UnmapBlockVolume failed", err}
		}
	}
	if !b.cfg.DryRun {
		if err := rootdir.DetachFileDevice(linkPath); err != nil {
			return &prefixedError{"UnmapVolume.UnmapBlockVolume failed", fmt.Errorf("blkUtil.DetachFileDevice failed. globalUnmapPath:%s, podUID: %s: %v", globalMapPath, pod.UID, err)}
		}
		symlink := filepath.Join(b.paths.PodDeviceMapPath(string(pod.UID)), v.SpecName)
		if fi, err := os.Lstat(symlink); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			_ = b.fs.RemoveAt(symlink, false)
		}
		if err := b.fs.UnmapBindMountDevice(linkPath); err != nil {
			return &prefixedError{"UnmapVolume.UnmapBlockVolume failed", fmt.Errorf("blkUtil.DetachFileDevice failed. globalUnmapPath:%s, podUID: %s, bindMount: %v: %v", globalMapPath, pod.UID, true, err)}
		}
	}
	if err := b.driverRegistered(v.Driver); err != nil {
		return transient("%s", rootdir.PluginLog("blockMapper.UnmapPodDevice failed to get CSI client: %v", err))
	}
	if _, err := b.nodeClient.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.Handle, TargetPath: publishPath}); err != nil {
		return rootdir.WithCause(rootdir.PluginLog("blockMapper.unpublishVolumeForBlock failed: %v", err), err)
	}
	return nil
}

// unmapDevice is GenerateUnmapDeviceFunc and csiBlockMapper.TearDownDevice:
// NodeUnstage only when the staging path still exists, then the orphan
// device files and the global map path go.
func (b *csiBlockMapper) unmapDevice(ctx context.Context, v *volumeSpec) error {
	if err := b.driverRegistered(v.Driver); err != nil {
		return transient("%s", rootdir.PluginLog("blockMapper.TearDownDevice failed to get CSI client: %v", err))
	}
	stagingPath := b.paths.BlockStagingPath(v.SpecName)
	for _, d := range []string{filepath.Dir(stagingPath), b.paths.GlobalMapPath(v.SpecName)} {
		if err := b.fs.CheckPath(d); err != nil {
			return err
		}
	}
	if _, err := os.Stat(stagingPath); err == nil {
		stage, err := b.nodeSupports(ctx, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
		if err != nil {
			return errors.New(rootdir.PluginLog("blockMapper.unstageVolumeForBlock failed to check STAGE_UNSTAGE_VOLUME capability: %v", err))
		}
		if stage {
			if err := b.nodeUnstageVolume(ctx, v.Handle, stagingPath); err != nil {
				return rootdir.WithCause(rootdir.PluginLog("blockMapper.unstageVolumeForBlock failed: %v", err), err)
			}
			if _, err := b.fs.RemoveOwnedTree(stagingPath); err != nil {
				return errors.New(rootdir.PluginLog("blockMapper.unstageVolumeForBlock failed to remove staging path after NodeUnstageVolume() error [%s]: %v", stagingPath, err))
			}
		}
	} else if os.IsNotExist(err) {
		b.trace.Note(ctx, false, "block staging path does not exist: no NodeUnstageVolume")
	} else {
		return err
	}
	b.cleanupOrphanDeviceFiles(ctx, v)
	if _, err := b.fs.RemoveOwnedTree(b.paths.GlobalMapPath(v.SpecName)); err != nil {
		return fmt.Errorf("failed to remove directory %s: %v", b.paths.GlobalMapPath(v.SpecName), err)
	}
	return nil
}

// cleanupOrphanDeviceFiles removes the publish dir and the staging path if
// empty, then the volume's dir (data and dev) on one filesystem.
func (b *csiBlockMapper) cleanupOrphanDeviceFiles(ctx context.Context, v *volumeSpec) {
	_ = b.fs.RemoveAt(filepath.Dir(b.paths.BlockPublishPath(v.SpecName, "x")), true)
	_ = b.fs.RemoveAt(b.paths.BlockStagingPath(v.SpecName), true)
	volumeDir := filepath.Dir(b.paths.GlobalMapPath(v.SpecName))
	if mounted, _ := rootdir.IsMountPoint(volumeDir); !mounted {
		// The kubelet removes the whole tree; the simulator only what it made.
		if removed, _ := b.fs.RemoveOwnedTree(volumeDir); len(removed) > 0 {
			b.trace.Note(ctx, true, "removed "+volumeDir)
		}
	}
}
