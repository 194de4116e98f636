package node

import (
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"

	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// mounterArgs are volume.MounterArgs: what the operation generator hands
// SetUp besides the volume.
type mounterArgs struct {
	SELinuxLabel string
	IsRemount    bool // a republish (requiresRepublish)
}

// setUp is csiMountMgr.SetUpAt (csi_mounter.go): NodePublishVolume for one
// volume of one pod, with the kubelet's steps in the kubelet's order.
func (m *csiMountMgr) setUp(ctx context.Context, pod *corev1.Pod, v *volumeSpec, args mounterArgs) error {
	target := m.paths.TargetPath(string(pod.UID), v.SpecName)
	if err := m.driverRegistered(v.Driver); err != nil {
		return transient("%s", rootdir.PluginLog("mounter.SetUpAt failed to get CSI client: %v", err))
	}
	if err := m.supportsVolumeLifecycleMode(v); err != nil {
		return transient("%s", rootdir.PluginLog("mounter.SetupAt failed to check volume lifecycle mode: %s", err))
	}
	stagingPath, publishContext, err := m.stagingForPublish(ctx, v)
	if err != nil {
		return err
	}
	if stagingPath != "" {
		// The staging path handed to the driver again: not through a
		// symlink or a mount swapped in since it was staged.
		if err := m.fs.CheckPath(filepath.Dir(stagingPath)); err != nil {
			return err
		}
	}
	parentDir := filepath.Dir(target)
	if err := m.makeTargetParent(ctx, parentDir, target); err != nil {
		return err
	}
	secrets, volumeContext, err := m.publishAttributes(ctx, pod, v, args)
	if err != nil {
		return err
	}
	vmg, err := m.nodeSupports(ctx, csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	if err != nil {
		return transient("%s", rootdir.PluginLog("mounter.SetUpAt failed to determine if the node service has VOLUME_MOUNT_GROUP capability: %v", err))
	}
	var fsGroup *int64
	if vmg {
		fsGroup = podFSGroup(pod)
	}
	mountOptions := v.mountOptions()
	seLinuxMount := m.pluginSupportsSELinuxMount(v.Driver) && args.SELinuxLabel != ""
	if seLinuxMount {
		mountOptions = addSELinuxMountOption(mountOptions, args.SELinuxLabel)
	}
	if err := m.saveTargetVolumeData(ctx, v, parentDir, seLinuxMount, args.SELinuxLabel); err != nil {
		m.removeMountDir(ctx, target)
		// A remount's target stays mounted (removeMountDir leaves a
		// mount point): the journal keeps its copy of vol_data.json, so
		// that `cleanup` can still unpublish it.
		if !args.IsRemount {
			m.fs.ForgetVolumeData(parentDir)
		}
		return err
	}
	err = m.nodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    publishContext,
		StagingTargetPath: stagingPath,
		TargetPath:        target,
		Readonly:          v.ReadOnly,
		Secrets:           secrets,
		VolumeContext:     volumeContext,
	}, v.accessMode(), v.FSType, mountOptions, fsGroup)
	if err != nil {
		// Since 1.36 a failed republish keeps the target: the pod still
		// uses the existing mount (#121271).
		if kindOf(err) == Final && !(args.IsRemount && m.release.KeepsTargetOnFailedRemount()) {
			m.removeMountDir(ctx, target)
			// A failed remount up to 1.35 took vol_data.json from a
			// volume that stays mounted: the journal keeps its copy, so
			// that `cleanup` can still unpublish it (recover.go).
			if !args.IsRemount {
				m.fs.ForgetVolumeData(parentDir)
			}
		}
		return err
	}
	if seLinuxMount {
		m.checkSELinuxContext(ctx, target, args.SELinuxLabel)
	}
	driverObj, hasDriverObj := m.cluster.CSIDriver(v.Driver)
	return m.applyFSGroup(ctx, pod, v, target, vmg, driverObj, hasDriverObj)
}

// stagingForPublish is SetUpAt's part for persistent volumes: the staging
// path when the driver stages, and the VolumeAttachment's publish_context.
func (m *csiMountMgr) stagingForPublish(ctx context.Context, v *volumeSpec) (string, map[string]string, error) {
	if !v.persistent() {
		return "", nil, nil
	}
	stage, err := m.nodeSupports(ctx, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return "", nil, errors.New(rootdir.PluginLog("mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: %v", err))
	}
	stagingPath := ""
	if stage {
		stagingPath = m.paths.DeviceMountPath(v.Driver, v.Handle)
	}
	publishContext, err := m.publishContext(ctx, v)
	if err != nil {
		return "", nil, transient("%s", rootdir.PluginLog("mounter.SetUpAt failed to fetch publishContext: %v", err))
	}
	return stagingPath, publishContext, nil
}

// makeTargetParent makes the target's parent, never the target itself
// (the driver's), after checking the directory is not someone else's.
func (m *csiMountMgr) makeTargetParent(ctx context.Context, parentDir, target string) error {
	if err := m.claimDir("mounter.SetUpAt", parentDir); err != nil {
		return err
	}
	m.fs.MarkMountPath(target)
	if err := m.fs.MkdirAll(parentDir, 0o750); err != nil {
		return errors.New(rootdir.PluginLog("mounter.SetUpAt failed to create dir %#v:  %v", parentDir, err))
	}
	m.trace.Note(ctx, true, "mkdir "+parentDir+" (0750); the target itself is left to the driver")
	return nil
}

// publishAttributes are NodePublishVolume's secrets and volume_context:
// the publish secret, the volume's attributes, pod info when the CSIDriver
// asks for it, and the service-account tokens in either.
func (m *csiMountMgr) publishAttributes(ctx context.Context, pod *corev1.Pod, v *volumeSpec, args mounterArgs) (map[string]string, map[string]string, error) {
	secrets := map[string]string{}
	if ref := v.PublishSecretRef; ref != nil {
		var err error
		if secrets, err = m.credentialsFromSecret(ref); err != nil {
			return nil, nil, transient("fetching NodePublishSecretRef %s failed: %v", secretRefText(ref), err)
		}
	}
	volumeContext := copyMap(v.Attributes)
	if d, ok := m.cluster.CSIDriver(v.Driver); ok && d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount {
		volumeContext = mergeMap(volumeContext, podInfoAttrs(pod, v.Mode))
	}
	tokenAttrs, inSecrets, err := m.serviceAccountTokenAttrs(ctx, pod, v.Driver)
	if err != nil {
		return nil, nil, transient("%s", rootdir.PluginLog("mounter.SetUpAt failed to get service accoount token attributes: %v", err))
	}
	m.noteTokenChange(ctx, pod, v, tokenAttrs, args.IsRemount)
	if inSecrets {
		secrets = mergeMap(secrets, tokenAttrs)
	} else {
		volumeContext = mergeMap(volumeContext, tokenAttrs)
	}
	return secrets, volumeContext, nil
}

// saveTargetVolumeData writes the pod volume's vol_data.json beside the
// target, as SetUpAt does before NodePublishVolume.
func (m *csiMountMgr) saveTargetVolumeData(ctx context.Context, v *volumeSpec, parentDir string, seLinuxMount bool, label string) error {
	volData := map[string]string{
		"specVolID":           v.SpecName,
		"volumeHandle":        v.Handle,
		"driverName":          v.Driver,
		"nodeName":            m.cfg.NodeName,
		"volumeLifecycleMode": string(v.Mode),
		"attachmentID":        rootdir.AttachmentName(v.Handle, v.Driver, m.cfg.NodeName),
	}
	if seLinuxMount {
		volData["seLinuxMountContext"] = label
	}
	if err := m.fs.SaveVolumeData(parentDir, volData); err != nil {
		return err
	}
	m.trace.Note(ctx, true, "wrote "+filepath.Join(parentDir, rootdir.VolDataFileName))
	return nil
}

// nodePublishVolume is csiDriverClient.NodePublishVolume.
func (k *csiPlugin) nodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest, am corev1.PersistentVolumeAccessMode, fsType string, mountFlags []string, fsGroup *int64) error {
	if req.VolumeId == "" {
		return errors.New("missing volume id")
	}
	if req.TargetPath == "" {
		return errors.New("missing target path")
	}
	mapper, err := k.accessModeMapper(ctx)
	if err != nil {
		return err
	}
	req.VolumeCapability = volumeCapability(mapper(am), fsType, mountFlags, fsGroup)
	if err := k.fs.CallStarted("NodePublishVolume", req.TargetPath); err != nil {
		return err
	}
	_, err = k.nodeClient.NodePublishVolume(ctx, req)
	k.fs.CallEnded("NodePublishVolume", req.TargetPath)
	return classifyRPC(err)
}

// supportsVolumeLifecycleMode is csiMountMgr.supportsVolumeLifecycleMode:
// without a CSIDriver object only persistent volumes are allowed.
func (k *csiPlugin) supportsVolumeLifecycleMode(v *volumeSpec) error {
	d, ok := k.cluster.CSIDriver(v.Driver)
	switch {
	case !ok && v.Mode == storagev1.VolumeLifecyclePersistent:
		return nil
	case !ok:
		return fmt.Errorf("volume mode %q not supported by driver %s (no CSIDriver object)", v.Mode, v.Driver)
	case slices.Contains(d.Spec.VolumeLifecycleModes, v.Mode):
		return nil
	}
	return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", v.Mode, v.Driver, d.Spec.VolumeLifecycleModes)
}

// applyFSGroup is the kubelet's own ownership change after a successful
// publish, when the driver does not take fsGroup itself (supportsFSGroup
// and VolumeOwnership.ChangePermissions, docs/kubelet.md §7.2 and §7.3). It runs
// for real on the published target; a failure makes the mount uncertain.
func (m *csiMountMgr) applyFSGroup(ctx context.Context, pod *corev1.Pod, v *volumeSpec, target string, vmg bool, d *storagev1.CSIDriver, hasDriver bool) error {
	fsGroup := podFSGroup(pod)
	if vmg || !supportsFSGroup(v, fsGroup, fsGroupPolicy(d, hasDriver)) {
		return nil
	}
	if m.cfg.DryRun {
		m.trace.Note(ctx, false, fmt.Sprintf("fsGroup %d: the kubelet would now set the group of every file on the volume (fsGroupPolicy %s)", *fsGroup, fsGroupPolicy(d, hasDriver)))
		return nil
	}
	var policy *corev1.PodFSGroupChangePolicy
	if pod.Spec.SecurityContext != nil {
		policy = pod.Spec.SecurityContext.FSGroupChangePolicy
	}
	res, err := changeOwnership(target, *fsGroup, policy, v.ReadOnly)
	if err != nil {
		return uncertain(fmt.Errorf("applyFSGroup failed for vol %s: %v", v.Handle, err))
	}
	m.trace.Note(ctx, false, fmt.Sprintf("fsGroup %d (fsGroupPolicy %s): %s", *fsGroup, fsGroupPolicy(d, hasDriver), res))
	return nil
}

// fsGroupPolicy is getFSGroupPolicy: ReadWriteOnceWithFSType when there is
// no CSIDriver object.
func fsGroupPolicy(d *storagev1.CSIDriver, hasDriver bool) storagev1.FSGroupPolicy {
	if hasDriver && d.Spec.FSGroupPolicy != nil {
		return *d.Spec.FSGroupPolicy
	}
	return storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
}

// supportsFSGroup is csiMountMgr.supportsFSGroup.
func supportsFSGroup(v *volumeSpec, fsGroup *int64, policy storagev1.FSGroupPolicy) bool {
	if fsGroup == nil || policy == storagev1.NoneFSGroupPolicy || v.ReadOnly {
		return false
	}
	if policy == storagev1.FileFSGroupPolicy {
		return true
	}
	if v.FSType == "" {
		return false
	}
	if v.persistent() {
		return v.PV.Spec.AccessModes != nil && hasReadWriteOnce(v.PV.Spec.AccessModes)
	}
	return true
}

func hasReadWriteOnce(modes []corev1.PersistentVolumeAccessMode) bool {
	return slices.Contains(modes, corev1.ReadWriteOnce) || slices.Contains(modes, corev1.ReadWriteOncePod)
}

// tearDown is csiPlugin.NewUnmounter, which reads vol_data.json beside the
// target (without it there is no unmounter, and the reconciler retries for
// ever: up to 1.35 a failed republish removes it, see
// KeepsTargetOnFailedRemount), then csiMountMgr.TearDownAt:
// NodeUnpublishVolume, then the kubelet removes the target if the driver
// left it unmounted and empty, vol_data.json and their parent.
func (m *csiMountMgr) tearDown(ctx context.Context, pod *corev1.Pod, v *volumeSpec) error {
	target := m.paths.TargetPath(string(pod.UID), v.SpecName)
	if _, err := m.fs.LoadVolumeData(filepath.Dir(target)); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = errors.New(rootdir.PluginLog("failed to open volume data file [%s]: %v", pe.Path, err))
		}
		return &prefixedError{"UnmountVolume.NewUnmounter failed", errors.New(rootdir.PluginLog("unmounter failed to load volume data file [%s]: %v", target, err))}
	}
	if err := m.driverRegistered(v.Driver); err != nil {
		return transient("%s", rootdir.PluginLog("Unmounter.TearDownAt failed to get CSI client: %v", err))
	}
	if _, err := m.nodeClient.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.Handle, TargetPath: target}); err != nil {
		return rootdir.WithCause(rootdir.PluginLog("Unmounter.TearDownAt failed: %v", err), err)
	}
	if err := m.removeMountDir(ctx, target); err != nil {
		return errors.New(rootdir.PluginLog("Unmounter.TearDownAt failed to clean mount dir [%s]: %v", target, err))
	}
	m.fs.ForgetVolumeData(filepath.Dir(target))
	return nil
}
