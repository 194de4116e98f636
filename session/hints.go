package session

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// Messages that say what to do next where a newcomer would otherwise be
// stuck: the error as the kubelet words it, then the way out.

// notFoundHint: a driver that answers NotFound for a PersistentVolume's
// handle does not know the volume; the handle must name one it has.
func notFoundHint(out *node.Outcome) string {
	for _, r := range out.Results {
		for _, v := range r.Volumes {
			if v.Err == nil || v.Mode != storagev1.VolumeLifecyclePersistent || grpcCode(v.Err) != codes.NotFound {
				continue
			}
			return fmt.Sprintf(" (the driver does not know volume %q: a PersistentVolume's spec.csi.volumeHandle must name a volume that exists on the driver; create one there first (CreateVolume), or let a StorageClass and a claim provision one)", v.Handle)
		}
	}
	return ""
}

// grpcCode is the gRPC code an error carries, wrapped or not.
func grpcCode(err error) codes.Code {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code()
	}
	return codes.Unknown
}

// attachHint: a persistent volume failed on a driver whose CSIDriver says
// attachRequired: false although its controller offers
// PUBLISH_UNPUBLISH_VOLUME. The kubelet then makes no VolumeAttachment,
// ControllerPublishVolume is never called and the node calls get no
// publish_context, where drivers that need it fail: the cause is the
// CSIDriver. Said only when the run already saw the controller's
// capabilities (the sidecars asked them): asking the driver now would be
// a call no kubelet makes.
func (ss *session) attachHint(out *node.Outcome) string {
	if ss.opts.cluster == nil || !ss.tally.publishes() {
		return ""
	}
	for _, r := range out.Results {
		for _, v := range r.Volumes {
			if v.Err == nil || v.Mode != storagev1.VolumeLifecyclePersistent {
				continue
			}
			d, ok := ss.opts.cluster.CSIDriver(v.Driver)
			if !ok || d.Spec.AttachRequired == nil || *d.Spec.AttachRequired {
				continue
			}
			return fmt.Sprintf(" (CSIDriver %s: attachRequired is false but the driver's controller offers PUBLISH_UNPUBLISH_VOLUME: ControllerPublishVolume is never called and NodeStageVolume/NodePublishVolume get no publish_context, docs/kubelet.md §10; set attachRequired: true)", d.Name)
		}
	}
	return ""
}
