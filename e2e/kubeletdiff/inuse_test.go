package kubeletdiff

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// waitInUseExpansion waits, after the mount, for the reconciler's in-use
// expansion wherever one is due, so that the comparison does not depend on
// how soon the phase ends: the mount operation ignores its expansion's
// result, so the actual state keeps the claim's old size (from
// VerifyControllerAttachedVolume) and the next reconciler pass expands the
// volume again (ExpandInUseVolume) until it records the PV's size
// (MarkVolumeAsResized). It is due when the mount's expansion grew the
// claim (its status in the API is at the PV's size); a claim the mount did
// not grow (the new path waiting for the resizer, a read-only volume, a
// driver without EXPAND_VOLUME) gets no NodeExpandVolume from that pass.
func (k *kubeletRun) waitInUseExpansion() error {
	for _, outer := range k.expected {
		mv, ok := k.mountedVolume(outer)
		if !ok || mv.VolumeSpec == nil || mv.VolumeSpec.PersistentVolume == nil || mv.VolumeSpec.ReadOnly {
			continue
		}
		pv := mv.VolumeSpec.PersistentVolume
		pvSize := pv.Spec.Capacity[corev1.ResourceStorage]
		if pv.Spec.ClaimRef == nil || !k.claimGrown(pv.Spec.ClaimRef, pvSize) {
			continue
		}
		name := mv.VolumeName
		if err := k.until(func() bool {
			size, known := claimSize(k.asw, name)
			return !known || size.Cmp(pvSize) >= 0
		}); err != nil {
			size, _ := claimSize(k.asw, name)
			return fmt.Errorf("in-use expansion of %s: the actual state's claim size is %s, the PV's %s: %w", outer, size.String(), pvSize.String(), err)
		}
	}
	return nil
}

// claimGrown tells whether the claim's status in the API is at pvSize.
func (k *kubeletRun) claimGrown(ref *corev1.ObjectReference, pvSize resource.Quantity) bool {
	pvc, err := k.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(context.Background(), ref.Name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	size, ok := pvc.Status.Capacity[corev1.ResourceStorage]
	return ok && size.Cmp(pvSize) >= 0
}

// claimSize is the actual state's claim size of a volume (GetClaimSize):
// a pointer up to 1.31, a value since 1.32. known is false when the
// release has neither.
func claimSize(asw any, name corev1.UniqueVolumeName) (size resource.Quantity, known bool) {
	switch a := asw.(type) {
	case interface {
		GetClaimSize(corev1.UniqueVolumeName) resource.Quantity
	}:
		return a.GetClaimSize(name), true
	case interface {
		GetClaimSize(corev1.UniqueVolumeName) *resource.Quantity
	}:
		if q := a.GetClaimSize(name); q != nil {
			return *q, true
		}
		return size, true
	}
	return size, false
}
