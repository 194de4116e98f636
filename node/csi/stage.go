package csi

// stage.go follows pkg/volume/csi/csi_attacher.go: MountDevice, UnmountDevice.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// MountDevice is csiAttacher.MountDevice (csi_attacher.go): staging of a
// persistent volume, once per volume on the node. The order of its steps is
// the kubelet's, because drivers see it: STAGE_UNSTAGE_VOLUME query, the
// VolumeAttachment and secret reads, globalmount created even for drivers
// that do not stage, VOLUME_MOUNT_GROUP query, vol_data.json (up to 1.33
// before the STAGE_UNSTAGE_VOLUME check), then NodeStageVolume (preceded by
// its SINGLE_NODE_MULTI_WRITER query).
func (a *Attacher) MountDevice(ctx context.Context, pod *corev1.Pod, v *VolumeSpec, seLinuxLabel string) error {
	deviceMountPath := a.Layout.DeviceMountPath(v.Driver, v.Handle)
	if err := a.DriverRegistered(v.Driver); err != nil {
		return Transientf("%s", rootdir.PluginLog("attacher.MountDevice failed to create newCsiDriverClient: %v", err))
	}
	stage, err := a.NodeSupports(ctx, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return err
	}
	publishContext, err := a.publishContext(ctx, v)
	if err != nil {
		return Transientf("%v", err)
	}
	secrets := map[string]string{}
	if v.StageSecretRef != nil && stage {
		secrets, err = a.CredentialsFromSecret(v.StageSecretRef)
		if err != nil {
			return Transientf("fetching NodeStageSecretRef %s failed: %v", SecretRefText(v.StageSecretRef), err)
		}
	}
	mountOptions := v.MountOptions()
	seLinuxMount := a.PluginSupportsSELinuxMount(v.Driver) && seLinuxLabel != ""
	if seLinuxMount {
		mountOptions = AddSELinuxMountOption(mountOptions, seLinuxLabel)
	}

	if err := a.makeDeviceMountPath(ctx, deviceMountPath); err != nil {
		return err
	}
	data := map[string]string{"volumeHandle": v.Handle, "driverName": v.Driver}
	if seLinuxMount {
		data["seLinuxMountContext"] = seLinuxLabel
	}
	// Up to 1.33 vol_data.json comes before the STAGE_UNSTAGE_VOLUME check.
	early := a.Release.StagingDataWithoutStaging()
	if early {
		if err := a.saveStagingData(ctx, deviceMountPath, data); err != nil {
			return err
		}
	}
	if !stage {
		if early {
			a.Trace.Note(ctx, false, "driver has no STAGE_UNSTAGE_VOLUME: no NodeStageVolume; the kubelet leaves globalmount empty, with vol_data.json beside it for UnmountDevice")
		} else {
			a.Trace.Note(ctx, false, "driver has no STAGE_UNSTAGE_VOLUME: no NodeStageVolume; the kubelet leaves globalmount empty, without vol_data.json")
		}
		return nil
	}
	vmg, err := a.NodeSupports(ctx, csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	if err != nil {
		return Transientf("%s", rootdir.PluginLog("attacher.MountDevice failed to determine if the node service has VOLUME_MOUNT_GROUP capability: %v", err))
	}
	if !early {
		if err := a.saveStagingData(ctx, deviceMountPath, data); err != nil {
			return err
		}
	}
	var fsGroup *int64
	if vmg {
		fsGroup = podFSGroup(pod)
	}
	err = a.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    publishContext,
		StagingTargetPath: deviceMountPath,
		Secrets:           secrets,
		VolumeContext:     copyMap(v.Attributes),
	}, v.AccessMode(), v.FSType, mountOptions, fsGroup)
	if err != nil {
		if KindOf(err) == Final {
			a.removeMountDir(ctx, deviceMountPath)
		}
		return err
	}
	return nil
}

// makeDeviceMountPath makes globalmount, which the simulator hands the
// driver.
func (a *Attacher) makeDeviceMountPath(ctx context.Context, deviceMountPath string) error {
	if err := a.ClaimDir("attacher.MountDevice", filepath.Dir(deviceMountPath)); err != nil {
		return err
	}
	a.FS.MarkMountPath(deviceMountPath)
	if err := a.FS.MkdirAllWithPathCheck(deviceMountPath, 0o750); err != nil {
		return errors.New(rootdir.PluginLog("attacher.MountDevice failed to create dir %#v:  %v", deviceMountPath, err))
	}
	a.Trace.Note(ctx, true, "mkdir "+deviceMountPath+" (0750)")
	return nil
}

// saveStagingData writes the staging vol_data.json beside globalmount; if
// it cannot, globalmount goes again.
func (a *Attacher) saveStagingData(ctx context.Context, deviceMountPath string, data map[string]string) error {
	dataDir := filepath.Dir(deviceMountPath)
	if err := a.FS.SaveVolumeData(dataDir, data); err != nil {
		a.removeMountDir(ctx, deviceMountPath)
		return rootdir.WithCause(rootdir.PluginLog("failed to save volume info data: %v", err), err)
	}
	a.Trace.Note(ctx, true, "wrote "+filepath.Join(dataDir, rootdir.VolDataFileName))
	return nil
}

// NodeStageVolume is csiDriverClient.NodeStageVolume: argument checks before
// any call, the access-mode query, then the RPC; non-final errors are
// uncertain.
func (k *Plugin) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest, am corev1.PersistentVolumeAccessMode, fsType string, mountFlags []string, fsGroup *int64) error {
	if req.VolumeId == "" {
		return errors.New("missing volume id")
	}
	if req.StagingTargetPath == "" {
		return errors.New("missing staging target path")
	}
	mapper, err := k.AccessModeMapper(ctx)
	if err != nil {
		return err
	}
	req.VolumeCapability = VolumeCapability(mapper(am), fsType, mountFlags, fsGroup)
	if err := k.FS.CallStarted("NodeStageVolume", req.StagingTargetPath); err != nil {
		return err
	}
	_, err = k.NodeClient.NodeStageVolume(ctx, req)
	k.FS.CallEnded("NodeStageVolume", req.StagingTargetPath)
	return ClassifyRPC(err)
}

// UnmountDevice is the operation generator's UnmountDevice step and
// csiAttacher.UnmountDevice: refuse while other mounts of the staging path
// remain; a missing vol_data.json means the driver never staged, so there is
// nothing to do (and nothing is removed).
func (a *Attacher) UnmountDevice(ctx context.Context, driver, handle string) error {
	deviceMountPath := a.Layout.DeviceMountPath(driver, handle)
	refs, err := a.FS.MountRefs(deviceMountPath)
	if err == nil && hasMountRefs(deviceMountPath, refs) {
		err = fmt.Errorf("the device mount path %q is still mounted by other references %v", deviceMountPath, refs)
	}
	if err != nil {
		return &OpError{Kind: Transient, Err: fmt.Errorf("GetDeviceMountRefs check failed: %w", err)}
	}
	dataDir := filepath.Dir(deviceMountPath)
	data, err := a.FS.LoadVolumeData(dataDir)
	if errors.Is(err, os.ErrNotExist) {
		a.Trace.Note(ctx, false, "no vol_data.json beside globalmount: nothing to unstage; the kubelet removes nothing")
		return nil
	}
	if err != nil {
		return err
	}
	if err := a.DriverRegistered(data["driverName"]); err != nil {
		return Transientf("%s", rootdir.PluginLog("attacher.UnmountDevice failed to create newCsiDriverClient: %v", err))
	}
	stage, err := a.NodeSupports(ctx, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	if err != nil {
		return errors.New(rootdir.PluginLog("attacher.UnmountDevice failed to check whether STAGE_UNSTAGE_VOLUME set: %v", err))
	}
	if stage {
		if err := a.NodeUnstageVolume(ctx, data["volumeHandle"], deviceMountPath); err != nil {
			return rootdir.WithCause(rootdir.PluginLog("attacher.UnmountDevice failed: %v", err), err)
		}
	}
	if err := a.removeMountDir(ctx, deviceMountPath); err != nil {
		return errors.New(rootdir.PluginLog("failed to clean up global mount %s: %s", dataDir, err))
	}
	return nil
}

func (k *Plugin) NodeUnstageVolume(ctx context.Context, volumeID, stagingPath string) error {
	if volumeID == "" {
		return errors.New("missing volume id")
	}
	if stagingPath == "" {
		return errors.New("missing staging target path")
	}
	_, err := k.NodeClient.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: stagingPath})
	return err
}

// hasMountRefs is util.HasMountRefs: references inside the kubelet's own
// plugin dirs do not count.
func hasMountRefs(mountPath string, refs []string) bool {
	pathToFind := mountPath
	if i := strings.Index(mountPath, "/plugins/kubernetes.io/"); i > -1 {
		pathToFind = mountPath[i:]
	}
	for _, ref := range refs {
		if !strings.Contains(ref, pathToFind) {
			return true
		}
	}
	return false
}

// removeMountDir runs the kubelet's clean-up and says what it removed.
func (k *Plugin) removeMountDir(ctx context.Context, p string) error {
	removed, err := k.FS.RemoveMountDir(p)
	for _, r := range removed {
		k.Trace.Note(ctx, true, "removed "+r)
	}
	return err
}

// podFSGroup is the pod's spec.securityContext.fsGroup, if any.
func podFSGroup(pod *corev1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}
