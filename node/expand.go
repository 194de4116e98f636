package node

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// expandDuringMount is expandVolumeDuringMount (operation_generator.go),
// run after a successful SetUp: when the claim's status.capacity is below
// the PV's capacity, the kubelet calls NodeExpandVolume (docs/kubelet.md §11).
// With RecoverVolumeExpansionFailure and an external resizer that records
// allocatedResources, the new size is status.allocatedResources and the
// call is made only while the resize status is NodeResizePending or
// NodeResizeInProgress.
func (k *Kubelet) expandDuringMount(ctx context.Context, pod *corev1.Pod, v *volumeSpec, at resizePaths) error {
	if v.PV == nil || v.PVC == nil {
		return nil
	}
	pvc := v.PVC
	// A claim written without a status is taken as bound by the PV
	// controller, which sets status.capacity to the PV's: nothing to expand.
	statusCap, known := pvc.Status.Capacity[corev1.ResourceStorage]
	specCap, ok := v.PV.Spec.Capacity[corev1.ResourceStorage]
	if !known || !ok || statusCap.Cmp(specCap) >= 0 {
		return nil
	}
	if v.ReadOnly {
		k.trace.Warn(ctx, fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", v.SpecName))
		return nil
	}
	newSize := specCap
	if k.recoveringFromExpansion(pvc) {
		// NodeExpander.runPreCheck: expand to allocatedResources while the
		// resizer says the node's turn has come; an RWX claim the controller
		// already grew is expanded unless annotated as not needing it.
		newSize = pvc.Status.AllocatedResources[corev1.ResourceStorage]
		resizeStatus := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
		alreadyUpdated := statusCap.Cmp(newSize) >= 0 && resizeStatus == ""
		_, notRequired := pvc.Annotations["volume.kubernetes.io/node-expansion-not-required"]
		allow := resizeStatus == corev1.PersistentVolumeClaimNodeResizePending ||
			resizeStatus == corev1.PersistentVolumeClaimNodeResizeInProgress ||
			(alreadyUpdated && slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) && !notRequired)
		if !allow {
			k.trace.Note(ctx, true, fmt.Sprintf("expansion: resize status %q: NodeExpandVolume is not allowed to proceed", resizeStatus))
			return nil
		}
	}
	size, err := k.nodeExpand(ctx, v, at, newSize)
	if err != nil {
		return err
	}
	// The kubelet records the new size in the claim's status.
	if pvc.Status.Capacity == nil {
		pvc.Status.Capacity = corev1.ResourceList{}
	}
	pvc.Status.Capacity[corev1.ResourceStorage] = size
	delete(pvc.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	k.trace.Note(ctx, false, fmt.Sprintf("expansion: claim %s/%s status.capacity is now %s", pvc.Namespace, pvc.Name, size.String()))
	return nil
}

// recoveringFromExpansion is checkForRecoveryFromExpansion: whether the
// claim's allocatedResources and resize status drive the expansion (the
// RecoverVolumeExpansionFailure path) or the legacy path expands to the PV's
// size. From 1.31 a claim with either field set takes the new path even
// with the gate off; in 1.30 the gate alone decides.
func (k *Kubelet) recoveringFromExpansion(pvc *corev1.PersistentVolumeClaim) bool {
	set := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != "" || pvc.Status.AllocatedResources != nil
	if !k.release.Enabled(RecoverVolumeExpansionFailure) && !k.release.ExpansionByClaimStatus() {
		return false
	}
	return set
}

// resizePaths are NodeResizeOptions' paths. A filesystem volume is expanded
// at its target path with the device mount path as staging path; a block
// volume at the device path MapPodDevice returned, with the staging path
// only when this very operation staged it (SetUpDevice's return value; empty
// for a device already staged, as on a republish or for a second pod).
type resizePaths struct {
	volumePath, stagingPath string
}

// nodeExpand is csiPlugin.nodeExpandWithClient and the client's
// NodeExpandVolume: the EXPAND_VOLUME query, the expand secret, then the
// access-mode query and the call, with the PV's mount options but never an
// SELinux option.
func (k *Kubelet) nodeExpand(ctx context.Context, v *volumeSpec, at resizePaths, newSize resource.Quantity) (resource.Quantity, error) {
	ok, err := k.nodeSupports(ctx, csi.NodeServiceCapability_RPC_EXPAND_VOLUME)
	if err != nil {
		return newSize, fmt.Errorf("Expander.NodeExpand failed to check if node supports expansion : %v", err)
	}
	if !ok {
		k.trace.Note(ctx, false, fmt.Sprintf("NodeExpand is not supported by the CSI driver %s", v.Driver))
		return newSize, nil
	}
	secrets := map[string]string{}
	if ref := v.PV.Spec.CSI.NodeExpandSecretRef; ref != nil {
		if secrets, err = k.credentialsFromSecret(ref); err != nil {
			return newSize, fmt.Errorf("expander.NodeExpand failed to get NodeExpandSecretRef %s/%s: %v", ref.Namespace, ref.Name, err)
		}
	}
	if newSize.Value() < 0 {
		return newSize, errors.New("size can not be less than 0")
	}
	mapper, err := k.accessModeMapper(ctx)
	if err != nil {
		return newSize, err
	}
	fsType := v.FSType
	if v.Block {
		fsType = fsTypeBlockName
	}
	req := &csi.NodeExpandVolumeRequest{
		VolumeId:          v.Handle,
		VolumePath:        at.volumePath,
		StagingTargetPath: at.stagingPath,
		CapacityRange:     &csi.CapacityRange{RequiredBytes: newSize.Value()},
		VolumeCapability:  volumeCapability(mapper(v.accessMode()), fsType, v.mountOptions(), nil),
		Secrets:           secrets,
	}
	resp, err := k.nodeClient.NodeExpandVolume(ctx, req)
	if err != nil {
		return newSize, fmt.Errorf("Expander.NodeExpand failed to expand the volume : %w", classifyRPC(err))
	}
	return *resource.NewQuantity(resp.GetCapacityBytes(), resource.BinarySI), nil
}
