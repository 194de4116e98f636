package node

import (
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"

	"context"
	"errors"
	"fmt"
)

// attachRequired is the negation of csiPlugin.skipAttach: attach is needed
// unless a CSIDriver object exists with attachRequired: false.
func (k *csiPlugin) attachRequired(driver string) bool {
	d, ok := k.cluster.CSIDriver(driver)
	if !ok {
		return true
	}
	return d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
}

// waitForAttach is what the kubelet does for an attachable PV before
// MountDevice: VerifyControllerAttachedVolume (the volume in
// node.status.volumesAttached) and csiAttacher.WaitForAttach (one GET of the
// VolumeAttachment, which must be attached).
func (k *Kubelet) waitForAttach(ctx context.Context, v *volumeSpec) error {
	if node, ok := k.cluster.Node(k.cfg.NodeName); ok {
		unique := rootdir.UniqueVolumeName(v.Driver, v.Handle)
		found := false
		for _, av := range node.Status.VolumesAttached {
			if string(av.Name) == unique {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("volume %s is not yet in node's status", unique)
		}
	} else {
		k.trace.Note(ctx, true, "no Node object given: the attach/detach controller is taken to have reported the volume in node.status.volumesAttached")
	}
	name := rootdir.AttachmentName(v.Handle, v.Driver, k.cfg.NodeName)
	va, ok := k.cluster.VolumeAttachment(name)
	if !ok {
		return fmt.Errorf("volume %v has GET error for volume attachment %v: volumeattachments.storage.k8s.io %q not found", v.Handle, name, name)
	}
	switch {
	case va.DeletionTimestamp != nil:
		return errors.New("volume attachment is being deleted")
	case va.Status.Attached:
		k.trace.Note(ctx, true, fmt.Sprintf("WaitForAttach: VolumeAttachment %s is attached", name))
		return nil
	case va.Status.AttachError != nil:
		return errors.New(va.Status.AttachError.Message)
	}
	return fmt.Errorf("volume %v is not attached for volume attachment %v", v.Handle, name)
}

// publishContext is csiPlugin.getPublishContext: nil when attach is
// skipped, else the VolumeAttachment's attachmentMetadata from a fresh GET.
func (k *csiPlugin) publishContext(ctx context.Context, v *volumeSpec) (map[string]string, error) {
	if !k.attachRequired(v.Driver) {
		return nil, nil
	}
	name := rootdir.AttachmentName(v.Handle, v.Driver, k.cfg.NodeName)
	va, ok := k.cluster.VolumeAttachment(name)
	if !ok {
		return nil, fmt.Errorf("volumeattachments.storage.k8s.io %q not found", name)
	}
	k.trace.Note(ctx, true, fmt.Sprintf("publish_context: GET VolumeAttachment %s: %d key(s) of attachmentMetadata", name, len(va.Status.AttachmentMetadata)))
	return copyMap(va.Status.AttachmentMetadata), nil
}
