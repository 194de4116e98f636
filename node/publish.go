package node

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// setUp is csiMountMgr.SetUpAt (csi_mounter.go): NodePublishVolume for one
// volume of one pod, with the kubelet's steps in the kubelet's order.
func (k *Kubelet) setUp(ctx context.Context, pod *corev1.Pod, v *volumeSpec) error {
	target := k.paths.TargetPath(string(pod.UID), v.SpecName)
	if err := k.driverRegistered(v.Driver); err != nil {
		return transient("%s", pluginLog("mounter.SetUpAt failed to get CSI client: %v", err))
	}
	if err := k.supportsVolumeLifecycleMode(v); err != nil {
		return transient("%s", pluginLog("mounter.SetupAt failed to check volume lifecycle mode: %s", err))
	}

	var stagingPath string
	var publishContext map[string]string
	if v.persistent() {
		stage, err := k.nodeSupports(ctx, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
		if err != nil {
			return errors.New(pluginLog("mounter.SetUpAt failed to check for STAGE_UNSTAGE_VOLUME capability: %v", err))
		}
		if stage {
			stagingPath = k.paths.DeviceMountPath(v.Driver, v.Handle)
		}
		publishContext, err = k.publishContext(ctx, v)
		if err != nil {
			return transient("%s", pluginLog("mounter.SetUpAt failed to fetch publishContext: %v", err))
		}
	}

	parentDir := filepath.Dir(target)
	if err := k.fs.mkdirAll(parentDir, 0o750); err != nil {
		return errors.New(pluginLog("mounter.SetUpAt failed to create dir %#v:  %v", parentDir, err))
	}
	k.trace.Note(ctx, true, "mkdir "+parentDir+" (0750); the target itself is left to the driver")

	secrets := map[string]string{}
	if ref := v.PublishSecretRef; ref != nil {
		var err error
		if secrets, err = k.credentialsFromSecret(ref); err != nil {
			return transient("fetching NodePublishSecretRef %s failed: %v", secretRefText(ref), err)
		}
	}

	volumeContext := copyMap(v.Attributes)
	driverObj, hasDriverObj := k.cluster.CSIDriver(v.Driver)
	if hasDriverObj && driverObj.Spec.PodInfoOnMount != nil && *driverObj.Spec.PodInfoOnMount {
		volumeContext = mergeMap(volumeContext, podInfoAttrs(pod, v.Mode))
	}
	tokenAttrs, inSecrets, err := k.serviceAccountTokenAttrs(ctx, pod, v.Driver)
	if err != nil {
		return transient("%s", pluginLog("mounter.SetUpAt failed to get service accoount token attributes: %v", err))
	}
	if inSecrets {
		secrets = mergeMap(secrets, tokenAttrs)
	} else {
		volumeContext = mergeMap(volumeContext, tokenAttrs)
	}

	vmg, err := k.nodeSupports(ctx, csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	if err != nil {
		return transient("%s", pluginLog("mounter.SetUpAt failed to determine if the node service has VOLUME_MOUNT_GROUP capability: %v", err))
	}
	var fsGroup *int64
	if vmg {
		fsGroup = podFSGroup(pod)
	}

	volData := map[string]string{
		"specVolID":           v.SpecName,
		"volumeHandle":        v.Handle,
		"driverName":          v.Driver,
		"nodeName":            k.cfg.NodeName,
		"volumeLifecycleMode": string(v.Mode),
		"attachmentID":        AttachmentName(v.Handle, v.Driver, k.cfg.NodeName),
	}
	if err := k.fs.saveVolumeData(parentDir, volData); err != nil {
		k.removeMountDir(ctx, target)
		return err
	}
	k.trace.Note(ctx, true, "wrote "+filepath.Join(parentDir, volDataFileName))

	err = k.nodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    publishContext,
		StagingTargetPath: stagingPath,
		TargetPath:        target,
		Readonly:          v.ReadOnly,
		Secrets:           secrets,
		VolumeContext:     volumeContext,
	}, v.accessMode(), v.FSType, v.mountOptions(), fsGroup)
	if err != nil {
		if kindOf(err) == Final {
			k.removeMountDir(ctx, target)
		}
		return err
	}
	k.noteFSGroup(ctx, pod, v, vmg, driverObj, hasDriverObj)
	return nil
}

// nodePublishVolume is csiDriverClient.NodePublishVolume.
func (k *Kubelet) nodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest, am corev1.PersistentVolumeAccessMode, fsType string, mountFlags []string, fsGroup *int64) error {
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
	_, err = k.nodeClient().NodePublishVolume(ctx, req)
	return classifyRPC(err)
}

// supportsVolumeLifecycleMode is csiMountMgr.supportsVolumeLifecycleMode:
// without a CSIDriver object only persistent volumes are allowed.
func (k *Kubelet) supportsVolumeLifecycleMode(v *volumeSpec) error {
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

// noteFSGroup says what the kubelet does about fsGroup after a successful
// publish (supportsFSGroup in csi_mounter.go); the ownership walk itself
// is not simulated yet.
func (k *Kubelet) noteFSGroup(ctx context.Context, pod *corev1.Pod, v *volumeSpec, vmg bool, d *storagev1.CSIDriver, hasDriver bool) {
	fsGroup := podFSGroup(pod)
	if fsGroup == nil || vmg || v.ReadOnly {
		return
	}
	policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	if hasDriver && d.Spec.FSGroupPolicy != nil {
		policy = *d.Spec.FSGroupPolicy
	}
	applies := false
	switch policy {
	case storagev1.FileFSGroupPolicy:
		applies = true
	case storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy:
		applies = v.FSType != "" && (!v.persistent() || hasReadWriteOnce(v.PV.Spec.AccessModes))
	}
	if applies {
		k.trace.Warn(ctx, fmt.Sprintf("fsGroupPolicy %s: the kubelet would now change the group of the volume's files to %d (ownership walk not simulated yet)", policy, *fsGroup))
	}
}

func hasReadWriteOnce(modes []corev1.PersistentVolumeAccessMode) bool {
	return slices.Contains(modes, corev1.ReadWriteOnce) || slices.Contains(modes, corev1.ReadWriteOncePod)
}

// tearDown is csiMountMgr.TearDownAt: NodeUnpublishVolume, then the
// kubelet removes the target if the driver left it unmounted and empty,
// vol_data.json and their parent.
func (k *Kubelet) tearDown(ctx context.Context, pod *corev1.Pod, v *volumeSpec) error {
	target := k.paths.TargetPath(string(pod.UID), v.SpecName)
	if err := k.driverRegistered(v.Driver); err != nil {
		return transient("%s", pluginLog("Unmounter.TearDownAt failed to get CSI client: %v", err))
	}
	if _, err := k.nodeClient().NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.Handle, TargetPath: target}); err != nil {
		return errors.New(pluginLog("Unmounter.TearDownAt failed: %v", err))
	}
	if err := k.removeMountDir(ctx, target); err != nil {
		return errors.New(pluginLog("Unmounter.TearDownAt failed to clean mount dir [%s]: %v", target, err))
	}
	return nil
}
