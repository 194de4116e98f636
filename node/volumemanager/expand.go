package volumemanager

// expand.go follows pkg/volume/util/operationexecutor/node_expander.go and
// operation_generator.go (expandVolumeDuringMount, nodeExpandVolume).

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
)

// expandDuringMount is expandVolumeDuringMount (operation_generator.go),
// run after a successful SetUp: when the claim's status.capacity is below
// the PV's capacity, the kubelet calls NodeExpandVolume (docs/kubelet.md §15.1).
// With RecoverVolumeExpansionFailure and an external resizer that records
// allocatedResources, the new size is status.allocatedResources and the
// call is made only while the resize status is NodeResizePending or
// NodeResizeInProgress. The mount operation ignores whether the expansion
// finished: the actual state keeps the claim's old size, so the reconciler
// expands the volume again while in use (expandinuse.go).
func (k *VolumeManager) expandDuringMount(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec, at resizePaths) error {
	if v.PV == nil || v.PVC == nil {
		return nil
	}
	// A claim written without a status is taken as bound by the PV
	// controller, which sets status.capacity to the PV's: nothing to expand.
	statusCap, known := v.PVC.Status.Capacity[corev1.ResourceStorage]
	specCap, ok := v.PV.Spec.Capacity[corev1.ResourceStorage]
	if !known || !ok || statusCap.Cmp(specCap) >= 0 {
		return nil
	}
	if v.ReadOnly {
		k.Trace.Warn(ctx, fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", v.SpecName))
		return nil
	}
	_, _, err := k.resizeOnNode(ctx, pod, v, at, specCap)
	return err
}

// resizeOnNode is the expansion both the mount and the in-use expansion
// make once they decided the volume is to grow to pvSize: the legacy path
// (legacyCallNodeExpandOnPlugin) or, when the claim's resize fields drive
// it, the new one (NodeExpander.expandOnPlugin). It returns whether the
// expansion is finished for the actual state and the size to record there.
func (k *VolumeManager) resizeOnNode(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec, at resizePaths, pvSize resource.Quantity) (bool, resource.Quantity, error) {
	pvc := v.PVC
	if !k.recoveringFromExpansion(pvc) {
		err := k.nodeExpand(ctx, v, at, pvSize)
		switch {
		case errors.Is(err, errNodeExpandNotSupported):
			return true, pvSize, nil
		case isInUseError(err):
			k.markInUseExpansionError(ctx, pod, v, err)
			return true, pvSize, nil
		case err != nil:
			return false, pvSize, err
		}
		// The claim's status is updated only when below the new size.
		if statusCap := pvc.Status.Capacity[corev1.ResourceStorage]; statusCap.Cmp(pvSize) < 0 {
			k.recordClaimSize(ctx, pvc, pvSize)
		}
		return true, pvSize, nil
	}
	// NodeExpander.runPreCheck: expand to allocatedResources while the
	// resizer says the node's turn has come; an RWX claim already grown is
	// expanded unless annotated as not needing it.
	oldSize := pvc.Status.Capacity[corev1.ResourceStorage]
	newSize := pvc.Status.AllocatedResources[corev1.ResourceStorage]
	allow, alreadyUpdated := nodeExpansionAllowed(k.Release.Version, pvc, newSize)
	if !allow {
		if alreadyUpdated {
			return true, newSize, nil
		}
		k.Trace.Note(ctx, true, fmt.Sprintf("expansion: resize status %q: NodeExpandVolume is not allowed to proceed", pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]))
		return false, oldSize, nil
	}
	err := k.nodeExpand(ctx, v, at, newSize)
	switch {
	case errors.Is(err, errNodeExpandNotSupported) && alreadyUpdated && k.Release.ExpandedClaimOnlyRWX():
		return true, newSize, nil
	case isInUseError(err):
		k.markInUseExpansionError(ctx, pod, v, err)
		return false, oldSize, nil
	case err != nil:
		return false, oldSize, err
	}
	if !alreadyUpdated {
		k.recordClaimSize(ctx, pvc, newSize)
	}
	return true, newSize, nil
}

// nodeExpansionAllowed is NodeExpander.runPreCheck on the claim: whether
// the node may expand to newSize, and whether the claim already has it.
func nodeExpansionAllowed(rel release.Version, pvc *corev1.PersistentVolumeClaim, newSize resource.Quantity) (allow, alreadyUpdated bool) {
	statusCap := pvc.Status.Capacity[corev1.ResourceStorage]
	resizeStatus := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	alreadyUpdated = statusCap.Cmp(newSize) >= 0 && resizeStatus == ""
	_, notRequired := pvc.Annotations["volume.kubernetes.io/node-expansion-not-required"]
	notRequired = notRequired && rel.NodeExpansionNotRequired()
	if alreadyUpdated && (!rel.ExpandedClaimOnlyRWX() || slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) && !notRequired) {
		return true, true
	}
	return resizeStatus == corev1.PersistentVolumeClaimNodeResizePending ||
		resizeStatus == corev1.PersistentVolumeClaimNodeResizeInProgress, alreadyUpdated
}

// recordClaimSize is the kubelet's update of the claim's status after a
// successful NodeExpandVolume (MarkFSResizeFinished,
// MarkNodeExpansionFinishedWithRecovery): the new size it asked for, not
// the size the driver answered, and no resize status.
func (k *VolumeManager) recordClaimSize(ctx context.Context, pvc *corev1.PersistentVolumeClaim, size resource.Quantity) {
	if pvc.Status.Capacity == nil {
		pvc.Status.Capacity = corev1.ResourceList{}
	}
	pvc.Status.Capacity[corev1.ResourceStorage] = size
	delete(pvc.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	k.Trace.Note(ctx, false, fmt.Sprintf("expansion: claim %s/%s status.capacity is now %s", pvc.Namespace, pvc.Name, size.String()))
}

// isInUseError is the CSI plugin's inUseError: FailedPrecondition says the
// driver cannot expand the volume while it is in use; the kubelet lets the
// mount go on and stops expanding the volume on this node.
func isInUseError(err error) bool {
	var s interface{ GRPCStatus() *status.Status }
	return errors.As(err, &s) && s.GRPCStatus().Code() == codes.FailedPrecondition
}

// markInUseExpansionError is MarkForInUseExpansionError: the reconciler
// will not expand this volume again while it stays attached.
func (k *VolumeManager) markInUseExpansionError(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec, err error) {
	k.State.MarkInUseExpansionError(v.UniqueName(string(pod.UID)))
	// Only the kubelet's log says so: no event is recorded (a whole
	// kubelet showed none), so it is not a warning of the trace.
	k.Trace.Note(ctx, false, fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q : %v; the kubelet lets the mount go on and does not expand the volume again on this node (it logs the error, no event)", v.SpecName, err))
}

// recoveringFromExpansion is checkForRecoveryFromExpansion: whether the
// claim's allocatedResources and resize status drive the expansion (the
// RecoverVolumeExpansionFailure path) or the legacy path expands to the PV's
// size. From 1.31 a claim with either field set takes the new path even
// with the gate off; in 1.30 the gate alone decides.
func (k *VolumeManager) recoveringFromExpansion(pvc *corev1.PersistentVolumeClaim) bool {
	set := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != "" || pvc.Status.AllocatedResources != nil
	if !k.Release.Enabled(release.RecoverVolumeExpansionFailure) && !k.Release.ExpansionByClaimStatus() {
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

// errNodeExpandNotSupported is the OperationNotSupportedError of a driver
// without EXPAND_VOLUME: the legacy path takes it as done.
var errNodeExpandNotSupported = errors.New("NodeExpand is not supported by the CSI driver")

// nodeExpand is csiPlugin.nodeExpandWithClient and the client's
// NodeExpandVolume: the EXPAND_VOLUME query, the expand secret, then the
// access-mode query and the call, with the PV's mount options but never an
// SELinux option.
func (k *VolumeManager) nodeExpand(ctx context.Context, v *csiplugin.VolumeSpec, at resizePaths, newSize resource.Quantity) error {
	ok, err := k.NodeSupports(ctx, csi.NodeServiceCapability_RPC_EXPAND_VOLUME)
	if err != nil {
		return fmt.Errorf("Expander.NodeExpand failed to check if node supports expansion : %v", err)
	}
	if !ok {
		k.Trace.Note(ctx, false, fmt.Sprintf("NodeExpand is not supported by the CSI driver %s", v.Driver))
		return fmt.Errorf("%w %s", errNodeExpandNotSupported, v.Driver)
	}
	secrets := map[string]string{}
	if ref := v.PV.Spec.CSI.NodeExpandSecretRef; ref != nil {
		if secrets, err = k.CredentialsFromSecret(ref); err != nil {
			return fmt.Errorf("expander.NodeExpand failed to get NodeExpandSecretRef %s/%s: %v", ref.Namespace, ref.Name, err)
		}
	}
	if newSize.Value() < 0 {
		return errors.New("size can not be less than 0")
	}
	mapper, err := k.AccessModeMapper(ctx)
	if err != nil {
		return err
	}
	fsType := v.FSType
	if v.Block {
		fsType = csiplugin.FsTypeBlockName
	}
	req := &csi.NodeExpandVolumeRequest{
		VolumeId:          v.Handle,
		VolumePath:        at.volumePath,
		StagingTargetPath: at.stagingPath,
		CapacityRange:     &csi.CapacityRange{RequiredBytes: newSize.Value()},
		VolumeCapability:  csiplugin.VolumeCapability(mapper(v.AccessMode()), fsType, v.MountOptions(), nil),
		Secrets:           secrets,
	}
	if _, err := k.NodeClient.NodeExpandVolume(ctx, req); err != nil {
		return fmt.Errorf("Expander.NodeExpand failed to expand the volume : %w", csiplugin.ClassifyRPC(err))
	}
	return nil
}
