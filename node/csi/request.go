package csi

// request.go follows pkg/volume/csi/csi_client.go: the volume capability and
// the access mode mappers.

import (
	"context"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
)

// accessModeMapper turns a Kubernetes access mode into a CSI one; which
// table is used depends on SINGLE_NODE_MULTI_WRITER (csi_client.go).
type accessModeMapper func(corev1.PersistentVolumeAccessMode) csi.VolumeCapability_AccessMode_Mode

// AsCSIAccessMode is asCSIAccessModeV1.
func AsCSIAccessMode(am corev1.PersistentVolumeAccessMode) csi.VolumeCapability_AccessMode_Mode {
	switch am {
	case corev1.ReadWriteOnce, corev1.ReadWriteOncePod:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case corev1.ReadOnlyMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	}
	return csi.VolumeCapability_AccessMode_UNKNOWN
}

// AsSingleNodeMultiWriterCapableCSIAccessMode is the table for drivers with
// SINGLE_NODE_MULTI_WRITER.
func AsSingleNodeMultiWriterCapableCSIAccessMode(am corev1.PersistentVolumeAccessMode) csi.VolumeCapability_AccessMode_Mode {
	switch am {
	case corev1.ReadWriteOnce:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
	case corev1.ReadOnlyMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case corev1.ReadWriteOncePod:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
	}
	return csi.VolumeCapability_AccessMode_UNKNOWN
}

// AccessModeMapper is getNodeV1AccessModeMapper: it asks the driver before
// every NodeStage and NodePublish.
func (k *Plugin) AccessModeMapper(ctx context.Context) (accessModeMapper, error) {
	ok, err := k.NodeSupports(ctx, csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER)
	if err != nil {
		return nil, err
	}
	if ok {
		return AsSingleNodeMultiWriterCapableCSIAccessMode, nil
	}
	return AsCSIAccessMode, nil
}

// VolumeCapability builds the capability the kubelet sends to NodeStage and
// NodePublish: Block{} for the internal fsType "block", else always a Mount
// access type, even with no fsType ({}), and volume_mount_group only when
// delegated.
func VolumeCapability(mode csi.VolumeCapability_AccessMode_Mode, fsType string, mountFlags []string, fsGroup *int64) *csi.VolumeCapability {
	if fsType == FsTypeBlockName {
		return &csi.VolumeCapability{
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
			AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		}
	}
	mv := &csi.VolumeCapability_MountVolume{FsType: fsType, MountFlags: mountFlags}
	if fsGroup != nil {
		mv.VolumeMountGroup = strconv.FormatInt(*fsGroup, 10)
	}
	return &csi.VolumeCapability{
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		AccessType: &csi.VolumeCapability_Mount{Mount: mv},
	}
}

// FsTypeBlockName is the fsType the CSI plugin uses internally for
// volumeMode: Block; the client sends a Block{} access type for it.
const FsTypeBlockName = "block"
