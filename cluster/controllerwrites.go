package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// ControllerWrites keeps the objects of the simulated controllers in the
// API server (sidecars.APIWriter), written as the cluster's controllers
// write them: the external-provisioner creates the PV, the PV controller
// binds the claim to it (claim.spec.volumeName, the bind-completed
// annotations, both statuses Bound), the attach/detach controller creates
// the VolumeAttachment and the external-attacher writes its status; at the
// end the VolumeAttachment is deleted once detached, the PV once its
// volume is deleted (the provisioner drops its finalizer first). A driver
// that reads them during NodeStage or NodePublish finds them.
type ControllerWrites struct {
	CP *ControlPlane
	// Note tells the trace what was written.
	Note func(string)
}

func (w *ControllerWrites) note(format string, args ...any) {
	if w.Note != nil {
		w.Note(fmt.Sprintf(format, args...))
	}
}

// Claim annotations of the PV controller's binding.
const (
	annBindCompleted     = "pv.kubernetes.io/bind-completed"
	annBoundByController = "pv.kubernetes.io/bound-by-controller"
)

// PVCreated creates the PV and binds the claim to it.
func (w *ControllerWrites) PVCreated(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	c := w.CP.admin
	claimPath := "/api/v1/namespaces/" + url.PathEscape(claim.Namespace) + "/persistentvolumeclaims/" + url.PathEscape(claim.Name)
	// The claim as the API server has it: its UID is the one the PV's
	// claimRef must name.
	server := &corev1.PersistentVolumeClaim{}
	if err := c.do(ctx, http.MethodGet, claimPath, nil, server); err != nil {
		return fmt.Errorf("API server: claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	in := pv.DeepCopy()
	in.Status = corev1.PersistentVolumeStatus{}
	in.ResourceVersion = ""
	if in.Spec.ClaimRef != nil {
		in.Spec.ClaimRef.UID = server.UID
		in.Spec.ClaimRef.ResourceVersion = server.ResourceVersion
	}
	created := &corev1.PersistentVolume{}
	if err := c.do(ctx, http.MethodPost, "/api/v1/persistentvolumes", in, created); err != nil {
		return fmt.Errorf("API server: create PersistentVolume %s: %w", pv.Name, err)
	}
	created.Status.Phase = corev1.VolumeBound
	if err := c.do(ctx, http.MethodPut, "/api/v1/persistentvolumes/"+url.PathEscape(pv.Name)+"/status", created, nil); err != nil {
		return fmt.Errorf("API server: status of PersistentVolume %s: %w", pv.Name, err)
	}
	// The PV controller's binding: the claim's volumeName and
	// annotations, then its status.
	server.Spec.VolumeName = pv.Name
	if server.Annotations == nil {
		server.Annotations = map[string]string{}
	}
	server.Annotations[annBindCompleted] = "yes"
	server.Annotations[annBoundByController] = "yes"
	for k, v := range claim.Annotations {
		if _, ok := server.Annotations[k]; !ok {
			server.Annotations[k] = v // the scheduler's selected-node
		}
	}
	bound := &corev1.PersistentVolumeClaim{}
	if err := c.do(ctx, http.MethodPut, claimPath, server, bound); err != nil {
		return fmt.Errorf("API server: bind claim %s/%s to PersistentVolume %s: %w", claim.Namespace, claim.Name, pv.Name, err)
	}
	bound.Status.Phase = corev1.ClaimBound
	bound.Status.AccessModes = pv.Spec.AccessModes
	bound.Status.Capacity = pv.Spec.Capacity.DeepCopy()
	if err := c.do(ctx, http.MethodPut, claimPath+"/status", bound, nil); err != nil {
		return fmt.Errorf("API server: status of claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	w.note("external-provisioner: created PersistentVolume %s; PV controller: bound claim %s/%s to it (both Bound)", pv.Name, claim.Namespace, claim.Name)
	return nil
}

// Attached creates the VolumeAttachment, then writes its status as the
// external-attacher does (attached, attachmentMetadata, or attachError).
func (w *ControllerWrites) Attached(ctx context.Context, va *storagev1.VolumeAttachment) error {
	c := w.CP.admin
	in := va.DeepCopy()
	in.Status = storagev1.VolumeAttachmentStatus{}
	created := &storagev1.VolumeAttachment{}
	if err := c.do(ctx, http.MethodPost, "/apis/storage.k8s.io/v1/volumeattachments", in, created); err != nil {
		return fmt.Errorf("API server: create VolumeAttachment %s: %w", va.Name, err)
	}
	created.Status = va.Status
	if err := c.do(ctx, http.MethodPut, "/apis/storage.k8s.io/v1/volumeattachments/"+url.PathEscape(va.Name)+"/status", created, nil); err != nil {
		return fmt.Errorf("API server: status of VolumeAttachment %s: %w", va.Name, err)
	}
	w.note("attach/detach controller: created VolumeAttachment %s; external-attacher: status attached=%v", va.Name, va.Status.Attached)
	return nil
}

// Detached deletes the VolumeAttachment.
func (w *ControllerWrites) Detached(ctx context.Context, va *storagev1.VolumeAttachment) error {
	err := w.CP.admin.do(ctx, http.MethodDelete, "/apis/storage.k8s.io/v1/volumeattachments/"+url.PathEscape(va.Name), nil, nil)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("API server: delete VolumeAttachment %s: %w", va.Name, err)
	}
	w.note("attach/detach controller: deleted VolumeAttachment %s", va.Name)
	return nil
}

// PVDeleted removes the PV: the provisioner's finalizer dropped, then the
// object deleted.
func (w *ControllerWrites) PVDeleted(ctx context.Context, pv *corev1.PersistentVolume) error {
	c := w.CP.admin
	path := "/api/v1/persistentvolumes/" + url.PathEscape(pv.Name)
	patch := map[string]any{"metadata": map[string]any{"finalizers": nil}}
	if err := c.do(ctx, http.MethodPatch, path, patch, nil, "application/merge-patch+json"); err != nil && !isNotFound(err) {
		return fmt.Errorf("API server: finalizers of PersistentVolume %s: %w", pv.Name, err)
	}
	if err := c.do(ctx, http.MethodDelete, path, nil, nil); err != nil && !isNotFound(err) {
		return fmt.Errorf("API server: delete PersistentVolume %s: %w", pv.Name, err)
	}
	w.note("external-provisioner: deleted PersistentVolume %s after DeleteVolume", pv.Name)
	return nil
}
