package csi

// attach.go follows pkg/volume/csi/csi_attacher.go: WaitForAttach's
// VolumeAttachment and publish_context.

import (
	"context"
	"fmt"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// AttachRequired is the negation of csiPlugin.skipAttach: attach is needed
// unless a CSIDriver object exists with attachRequired: false.
func (k *Plugin) AttachRequired(driver string) bool {
	d, ok := k.Cluster.CSIDriver(driver)
	if !ok {
		return true
	}
	return d.Spec.AttachRequired == nil || *d.Spec.AttachRequired
}

// publishContext is csiPlugin.getPublishContext: nil when attach is
// skipped, else the VolumeAttachment's attachmentMetadata from a fresh GET.
func (k *Plugin) publishContext(ctx context.Context, v *VolumeSpec) (map[string]string, error) {
	if !k.AttachRequired(v.Driver) {
		return nil, nil
	}
	name := rootdir.AttachmentName(v.Handle, v.Driver, k.NodeName)
	va, ok := k.Cluster.VolumeAttachment(name)
	if !ok {
		return nil, fmt.Errorf("volumeattachments.storage.k8s.io %q not found", name)
	}
	k.Trace.Note(ctx, true, fmt.Sprintf("publish_context: GET VolumeAttachment %s: %d key(s) of attachmentMetadata", name, len(va.Status.AttachmentMetadata)))
	return copyMap(va.Status.AttachmentMetadata), nil
}
