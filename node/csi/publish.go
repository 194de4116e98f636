package csi

// publish.go follows pkg/volume/csi/csi_mounter.go: SetUpAt, TearDownAt.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// MounterArgs are volume.MounterArgs: what the operation generator hands
// SetUp besides the volume.
type MounterArgs struct {
	SELinuxLabel string
	IsRemount    bool // a republish (requiresRepublish)
}

// SetUp is csiMountMgr.SetUpAt (csi_mounter.go): NodePublishVolume for one
// volume of one pod, with the kubelet's steps in the kubelet's order.
func (m *Mounter) SetUp(ctx context.Context, pod *corev1.Pod, v *VolumeSpec, args MounterArgs) error {
	target := m.Layout.TargetPath(string(pod.UID), v.SpecName)
	if err := m.DriverRegistered(v.Driver); err != nil {
		return Transientf("%s", rootdir.PluginLog("mounter.SetUpAt failed to get CSI client: %v", err))
	}
	if err := m.supportsVolumeLifecycleMode(v); err != nil {
		return Transientf("%s", rootdir.PluginLog("mounter.SetupAt failed to check volume lifecycle mode: %s", err))
	}
	stagingPath, publishContext, err := m.stagingForPublish(ctx, v)
	if err != nil {
		return err
	}
	if stagingPath != "" {
		// The staging path handed to the driver again: not through a
		// symlink or a mount swapped in since it was staged.
		if err := m.FS.CheckPath(filepath.Dir(stagingPath)); err != nil {
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
	vmg, err := m.NodeSupports(ctx, csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	if err != nil {
		return Transientf("%s", rootdir.PluginLog("mounter.SetUpAt failed to determine if the node service has VOLUME_MOUNT_GROUP capability: %v", err))
	}
	var fsGroup *int64
	if vmg {
		fsGroup = podFSGroup(pod)
	}
	mountOptions := v.MountOptions()
	seLinuxMount := m.PluginSupportsSELinuxMount(v.Driver) && args.SELinuxLabel != ""
	if seLinuxMount {
		mountOptions = AddSELinuxMountOption(mountOptions, args.SELinuxLabel)
	}
	if err := m.saveTargetVolumeData(ctx, v, parentDir, seLinuxMount, args.SELinuxLabel); err != nil {
		m.removeMountDir(ctx, target)
		// A remount's target stays mounted (removeMountDir leaves a
		// mount point): the journal keeps its copy of vol_data.json, so
		// that `cleanup` can still unpublish it.
		if !args.IsRemount {
			m.FS.ForgetVolumeData(parentDir)
		}
		return err
	}
	err = m.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    publishContext,
		StagingTargetPath: stagingPath,
		TargetPath:        target,
		Readonly:          v.ReadOnly,
		Secrets:           secrets,
		VolumeContext:     volumeContext,
	}, v.AccessMode(), v.FSType, mountOptions, fsGroup)
	if err != nil {
		// Since 1.36 a failed republish keeps the target: the pod still
		// uses the existing mount (#121271).
		if KindOf(err) == Final && !(args.IsRemount && m.Release.KeepsTargetOnFailedRemount()) {
			m.removeMountDir(ctx, target)
			// A failed remount up to 1.35 took vol_data.json from a
			// volume that stays mounted: the journal keeps its copy, so
			// that `cleanup` can still unpublish it (recover.go).
			if !args.IsRemount {
				m.FS.ForgetVolumeData(parentDir)
			}
		}
		return err
	}
	if seLinuxMount {
		m.checkSELinuxContext(ctx, target, args.SELinuxLabel)
	}
	driverObj, hasDriverObj := m.Cluster.CSIDriver(v.Driver)
	return m.applyFSGroup(ctx, pod, v, target, vmg, driverObj, hasDriverObj)
}

// stagingForPublish is SetUpAt's part for persistent volumes: the staging
// path when the driver stages, and the VolumeAttachment's publish_context.
func (m *Mounter) stagingForPublish(ctx context.Context, v *VolumeSpec) (string, map[string]string, error) {
	if !v.Persistent() {
		return "", nil, nil
	}
	stage, err := m.NodeSupports(ctx, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return "", nil, errors.New(rootdir.PluginLog("mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: %v", err))
	}
	stagingPath := ""
	if stage {
		stagingPath = m.Layout.DeviceMountPath(v.Driver, v.Handle)
	}
	publishContext, err := m.publishContext(ctx, v)
	if err != nil {
		return "", nil, Transientf("%s", rootdir.PluginLog("mounter.SetUpAt failed to fetch publishContext: %v", err))
	}
	return stagingPath, publishContext, nil
}

// makeTargetParent makes the target's parent, never the target itself
// (the driver's), after checking the directory is not someone else's.
func (m *Mounter) makeTargetParent(ctx context.Context, parentDir, target string) error {
	if err := m.ClaimDir("mounter.SetUpAt", parentDir); err != nil {
		return err
	}
	m.FS.MarkMountPath(target)
	if err := m.FS.MkdirAll(parentDir, 0o750); err != nil {
		return errors.New(rootdir.PluginLog("mounter.SetUpAt failed to create dir %#v:  %v", parentDir, err))
	}
	m.Trace.Note(ctx, true, "mkdir "+parentDir+" (0750); the target itself is left to the driver")
	return nil
}

// publishAttributes are NodePublishVolume's secrets and volume_context:
// the publish secret, the volume's attributes, pod info when the CSIDriver
// asks for it, and the service-account tokens in either.
func (m *Mounter) publishAttributes(ctx context.Context, pod *corev1.Pod, v *VolumeSpec, args MounterArgs) (map[string]string, map[string]string, error) {
	secrets := map[string]string{}
	if ref := v.PublishSecretRef; ref != nil {
		var err error
		if secrets, err = m.CredentialsFromSecret(ref); err != nil {
			return nil, nil, Transientf("fetching NodePublishSecretRef %s failed: %v", SecretRefText(ref), err)
		}
	}
	volumeContext := copyMap(v.Attributes)
	if d, ok := m.Cluster.CSIDriver(v.Driver); ok && d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount {
		volumeContext = MergeMap(volumeContext, podInfoAttrs(pod, v.Mode))
	}
	tokenAttrs, inSecrets, err := m.serviceAccountTokenAttrs(ctx, pod, v.Driver)
	if err != nil {
		return nil, nil, Transientf("%s", rootdir.PluginLog("mounter.SetUpAt failed to get service accoount token attributes: %v", err))
	}
	m.noteTokenChange(ctx, pod, v, tokenAttrs, args.IsRemount)
	if inSecrets {
		secrets = MergeMap(secrets, tokenAttrs)
	} else {
		volumeContext = MergeMap(volumeContext, tokenAttrs)
	}
	return secrets, volumeContext, nil
}

// saveTargetVolumeData writes the pod volume's vol_data.json beside the
// target, as SetUpAt does before NodePublishVolume.
func (m *Mounter) saveTargetVolumeData(ctx context.Context, v *VolumeSpec, parentDir string, seLinuxMount bool, label string) error {
	volData := map[string]string{
		"specVolID":           v.SpecName,
		"volumeHandle":        v.Handle,
		"driverName":          v.Driver,
		"nodeName":            m.NodeName,
		"volumeLifecycleMode": string(v.Mode),
		"attachmentID":        rootdir.AttachmentName(v.Handle, v.Driver, m.NodeName),
	}
	if seLinuxMount {
		volData["seLinuxMountContext"] = label
	}
	if err := m.FS.SaveVolumeData(parentDir, volData); err != nil {
		return err
	}
	m.Trace.Note(ctx, true, "wrote "+filepath.Join(parentDir, rootdir.VolDataFileName))
	return nil
}

// NodePublishVolume is csiDriverClient.NodePublishVolume.
func (k *Plugin) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest, am corev1.PersistentVolumeAccessMode, fsType string, mountFlags []string, fsGroup *int64) error {
	if req.VolumeId == "" {
		return errors.New("missing volume id")
	}
	if req.TargetPath == "" {
		return errors.New("missing target path")
	}
	mapper, err := k.AccessModeMapper(ctx)
	if err != nil {
		return err
	}
	req.VolumeCapability = VolumeCapability(mapper(am), fsType, mountFlags, fsGroup)
	if err := k.FS.CallStarted("NodePublishVolume", req.TargetPath); err != nil {
		return err
	}
	_, err = k.NodeClient.NodePublishVolume(ctx, req)
	k.FS.CallEnded("NodePublishVolume", req.TargetPath)
	return ClassifyRPC(err)
}

// supportsVolumeLifecycleMode is csiMountMgr.supportsVolumeLifecycleMode:
// without a CSIDriver object only persistent volumes are allowed.
func (k *Plugin) supportsVolumeLifecycleMode(v *VolumeSpec) error {
	d, ok := k.Cluster.CSIDriver(v.Driver)
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
func (m *Mounter) applyFSGroup(ctx context.Context, pod *corev1.Pod, v *VolumeSpec, target string, vmg bool, d *storagev1.CSIDriver, hasDriver bool) error {
	fsGroup := podFSGroup(pod)
	if vmg || !SupportsFSGroup(v, fsGroup, FSGroupPolicy(d, hasDriver)) {
		return nil
	}
	if m.DryRun {
		m.Trace.Note(ctx, false, fmt.Sprintf("fsGroup %d: the kubelet would now set the group of every file on the volume (fsGroupPolicy %s)", *fsGroup, FSGroupPolicy(d, hasDriver)))
		return nil
	}
	var policy *corev1.PodFSGroupChangePolicy
	if pod.Spec.SecurityContext != nil {
		policy = pod.Spec.SecurityContext.FSGroupChangePolicy
	}
	res, err := ChangeOwnership(target, *fsGroup, policy, v.ReadOnly)
	if err != nil {
		return AsUncertain(fmt.Errorf("applyFSGroup failed for vol %s: %v", v.Handle, err))
	}
	m.Trace.Note(ctx, false, fmt.Sprintf("fsGroup %d (fsGroupPolicy %s): %s", *fsGroup, FSGroupPolicy(d, hasDriver), res))
	return nil
}

// FSGroupPolicy is getFSGroupPolicy: ReadWriteOnceWithFSType when there is
// no CSIDriver object.
func FSGroupPolicy(d *storagev1.CSIDriver, hasDriver bool) storagev1.FSGroupPolicy {
	if hasDriver && d.Spec.FSGroupPolicy != nil {
		return *d.Spec.FSGroupPolicy
	}
	return storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
}

// SupportsFSGroup is csiMountMgr.supportsFSGroup.
func SupportsFSGroup(v *VolumeSpec, fsGroup *int64, policy storagev1.FSGroupPolicy) bool {
	if fsGroup == nil || policy == storagev1.NoneFSGroupPolicy || v.ReadOnly {
		return false
	}
	if policy == storagev1.FileFSGroupPolicy {
		return true
	}
	if v.FSType == "" {
		return false
	}
	if v.Persistent() {
		return v.PV.Spec.AccessModes != nil && hasReadWriteOnce(v.PV.Spec.AccessModes)
	}
	return true
}

func hasReadWriteOnce(modes []corev1.PersistentVolumeAccessMode) bool {
	return slices.Contains(modes, corev1.ReadWriteOnce) || slices.Contains(modes, corev1.ReadWriteOncePod)
}

// TearDown is csiPlugin.NewUnmounter, which reads vol_data.json beside the
// target (without it there is no unmounter, and the reconciler retries for
// ever: up to 1.35 a failed republish removes it, see
// KeepsTargetOnFailedRemount), then csiMountMgr.TearDownAt:
// NodeUnpublishVolume, then the kubelet removes the target if the driver
// left it unmounted and empty, vol_data.json and their parent.
func (m *Mounter) TearDown(ctx context.Context, pod *corev1.Pod, v *VolumeSpec) error {
	target := m.Layout.TargetPath(string(pod.UID), v.SpecName)
	if _, err := m.FS.LoadVolumeData(filepath.Dir(target)); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = errors.New(rootdir.PluginLog("failed to open volume data file [%s]: %v", pe.Path, err))
		}
		return &prefixedError{"UnmountVolume.NewUnmounter failed", errors.New(rootdir.PluginLog("unmounter failed to load volume data file [%s]: %v", target, err))}
	}
	if err := m.DriverRegistered(v.Driver); err != nil {
		return Transientf("%s", rootdir.PluginLog("Unmounter.TearDownAt failed to get CSI client: %v", err))
	}
	if _, err := m.NodeClient.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.Handle, TargetPath: target}); err != nil {
		return rootdir.WithCause(rootdir.PluginLog("Unmounter.TearDownAt failed: %v", err), err)
	}
	if err := m.removeMountDir(ctx, target); err != nil {
		return errors.New(rootdir.PluginLog("Unmounter.TearDownAt failed to clean mount dir [%s]: %v", target, err))
	}
	m.FS.ForgetVolumeData(filepath.Dir(target))
	return nil
}

// checkSELinuxContext warns when the driver did not mount the target with
// the context it was sent: a silent failure the field knows well, since a
// bind mount or a FUSE mount drops the option without an error.
func (k *Plugin) checkSELinuxContext(ctx context.Context, target, label string) {
	if k.DryRun {
		return
	}
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(target))
	if err != nil || len(mounts) == 0 {
		k.Trace.Warn(ctx, "SELinux: cannot check the context of "+target+": not a mount point")
		return
	}
	want := "context=" + strconv.Quote(label)
	m := mounts[len(mounts)-1]
	for _, opt := range strings.Split(m.Options+","+m.VFSOptions, ",") {
		if opt == want || opt == "context="+label {
			k.Trace.Note(ctx, true, "SELinux: target mounted with "+want)
			return
		}
	}
	k.Trace.Warn(ctx, fmt.Sprintf("SELinux: the driver was sent %s but the target is mounted without it (options %q, %q): the pod would see the wrong label", want, m.Options, m.VFSOptions))
}
