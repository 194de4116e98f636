package sidecars

import (
	"context"
	"fmt"
	"maps"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// attachment is a VolumeAttachment the attach/detach controller made for
// a provisioned PV, and whether the external-attacher published it.
type attachment struct {
	va        *storagev1.VolumeAttachment
	pv        *corev1.PersistentVolume
	published bool
}

// attach is the attach/detach controller and the external-attacher for a
// PV this run provisioned: nothing when the CSIDriver says attach is not
// required or the input already has the VolumeAttachment (used as the
// kubelet finds it); otherwise the VolumeAttachment, attached by
// ControllerPublishVolume with the node's ID when the driver has
// PUBLISH_UNPUBLISH_VOLUME (publish_context becomes its
// attachmentMetadata), and attached without a call when it has not (the
// sidecar's trivial handler). A failed ControllerPublishVolume is the
// VolumeAttachment's attachError, which the kubelet then reports.
func (c *Controllers) attach(ctx context.Context, pv *corev1.PersistentVolume) error {
	if !attachRequired(c.cfg.Cluster, c.driver) {
		return nil
	}
	handle := pv.Spec.CSI.VolumeHandle
	name := node.AttachmentName(handle, c.driver, c.cfg.NodeName)
	if _, ok := c.cfg.Cluster.VolumeAttachment(name); ok {
		return nil
	}
	pvName := pv.Name
	va := &storagev1.VolumeAttachment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "VolumeAttachment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: c.driver, NodeName: c.cfg.NodeName,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName}},
	}
	a := &attachment{va: va, pv: pv}
	actx, cancel := c.callContext(ctx, "attacher", "Attach", pv.Name)
	defer cancel()
	if c.caps.has(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) {
		if err := c.publish(actx, a); err != nil {
			return err
		}
	} else {
		va.Status.Attached = true
		c.cfg.Trace.Note(actx, false, fmt.Sprintf("VolumeAttachment %s attached without a call: the driver has no PUBLISH_UNPUBLISH_VOLUME", name))
	}
	c.mu.Lock()
	c.attached = append(c.attached, a)
	c.mu.Unlock()
	src := manifests.Source{File: "(attach/detach controller for PV " + pv.Name + ")", Doc: 1}
	if err := c.cfg.Cluster.Add(va, src); err != nil {
		return err
	}
	if c.api != nil {
		if err := c.api.Attached(ctx, va); err != nil {
			return err
		}
	}
	c.reportAttached(handle)
	return nil
}

// publish calls ControllerPublishVolume as csiHandler.csiAttach does,
// written down before the call (an intent `cleanup` undoes) and after.
func (c *Controllers) publish(ctx context.Context, a *attachment) error {
	pv := a.pv
	// What stops the attacher before the call is the VolumeAttachment's
	// attachError too (saveAttachError), which the kubelet reports.
	secrets, err := c.pvSecrets(pv.Spec.CSI.ControllerPublishSecretRef)
	if err != nil {
		a.va.Status.AttachError = &storagev1.VolumeError{Time: metav1.Now(), Message: err.Error()}
		return nil
	}
	mode, err := csiAccessMode(pv.Spec.AccessModes, c.caps.has(csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER))
	if err != nil {
		a.va.Status.AttachError = &storagev1.VolumeError{Time: metav1.Now(), Message: err.Error()}
		return nil
	}
	block := pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock
	readOnly := pv.Spec.CSI.ReadOnly && c.caps.has(csi.ControllerServiceCapability_RPC_PUBLISH_READONLY)
	req := &csi.ControllerPublishVolumeRequest{
		VolumeId:         pv.Spec.CSI.VolumeHandle,
		NodeId:           c.reg.NodeID,
		VolumeCapability: capability(block, pv.Spec.CSI.FSType, pv.Spec.MountOptions, mode),
		Readonly:         readOnly,
		Secrets:          secrets,
		VolumeContext:    pv.Spec.CSI.VolumeAttributes,
	}
	rec, err := c.openRecord()
	if err != nil {
		return err
	}
	if err := rec.write(entry{Kind: kindPublishing, Handle: req.VolumeId, NodeID: req.NodeId}); err != nil {
		return err
	}
	a.published = true
	resp, err := csi.NewControllerClient(c.cfg.Conn).ControllerPublishVolume(ctx, req)
	if err != nil {
		a.va.Status.AttachError = &storagev1.VolumeError{Time: metav1.Now(), Message: err.Error()}
		return nil
	}
	a.va.Status.Attached = true
	a.va.Status.AttachmentMetadata = maps.Clone(resp.GetPublishContext())
	c.cfg.Trace.Note(ctx, false, fmt.Sprintf("VolumeAttachment %s attached: attachmentMetadata %v (the kubelet's publish_context)", a.va.Name, resp.GetPublishContext()))
	return rec.write(entry{Kind: kindPublished, Handle: req.VolumeId, NodeID: req.NodeId})
}

// reportAttached puts the volume in the Node's status.volumesAttached, as
// the attach/detach controller does, when the input has the Node.
func (c *Controllers) reportAttached(handle string) {
	n, ok := c.cfg.Cluster.Node(c.cfg.NodeName)
	if !ok {
		return
	}
	n.Status.VolumesAttached = append(n.Status.VolumesAttached, corev1.AttachedVolume{
		Name: corev1.UniqueVolumeName(node.UniqueVolumeName(c.driver, handle)),
	})
}

// detach undoes attach for the PV: ControllerUnpublishVolume with the
// controller-publish secrets when the attacher published it
// (csiHandler.csiDetach).
func (c *Controllers) detach(ctx context.Context, pv *corev1.PersistentVolume) error {
	a := c.attachmentOf(pv)
	if a == nil {
		return nil
	}
	if !a.published {
		return c.detached(ctx, a)
	}
	secrets, err := c.pvSecrets(pv.Spec.CSI.ControllerPublishSecretRef)
	if err != nil {
		return fmt.Errorf("external-attacher: PV %s: %w", pv.Name, err)
	}
	dctx, cancel := c.callContext(ctx, "attacher", "Detach", pv.Name)
	defer cancel()
	req := &csi.ControllerUnpublishVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle, NodeId: c.reg.NodeID, Secrets: secrets}
	if _, err := csi.NewControllerClient(c.cfg.Conn).ControllerUnpublishVolume(dctx, req); err != nil {
		return fmt.Errorf("external-attacher: ControllerUnpublishVolume %s from node %s: %w", req.VolumeId, req.NodeId, err)
	}
	a.published = false
	if err := c.record.write(entry{Kind: kindUnpublished, Handle: req.VolumeId, NodeID: req.NodeId}); err != nil {
		return err
	}
	return c.detached(ctx, a)
}

// detached deletes the VolumeAttachment from the API server, as the
// attach/detach controller does once the attacher detached the volume.
func (c *Controllers) detached(ctx context.Context, a *attachment) error {
	if c.api == nil {
		return nil
	}
	return c.api.Detached(ctx, a.va)
}

func (c *Controllers) attachmentOf(pv *corev1.PersistentVolume) *attachment {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.attached {
		if a.pv == pv {
			return a
		}
	}
	return nil
}

// pvSecrets reads the Secret a PV refers to (getCredentialsFromPV).
func (c *Controllers) pvSecrets(ref *corev1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	return c.secretValues(ref)
}
