package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// attacher is a scenario's attach step, the Controller of its plan: the
// attach/detach controller and the external-attacher for the scenario's
// PV. When attach is required, the VolumeAttachment; with
// PUBLISH_UNPUBLISH_VOLUME, ControllerPublishVolume as the
// external-attacher calls it, its publish_context as attachmentMetadata,
// and ControllerUnpublishVolume after the kubelet's teardown.
type attacher struct {
	r *scenarioRun
	// attached are the volumes ControllerPublishVolume attached, to detach
	// after the teardown.
	attached []*csi.ControllerPublishVolumeRequest
}

var _ node.Controller = (*attacher)(nil)

// finding is a scenario's failure carried as an error through the
// kubelet's outcome.
type finding struct{ Failure }

func (f *finding) Error() string { return f.Failure.String() }

func failure(section, did, needed string) error {
	return &finding{Failure{Did: did, Needed: needed, Section: section}}
}

// Prepare attaches the pods' PV once the driver registered, before the
// kubelet mounts anything.
func (a *attacher) Prepare(ctx context.Context, reg *node.Registration, pods []*corev1.Pod) error {
	for _, pod := range pods {
		if err := a.attach(ctx, reg, pod); err != nil {
			return err
		}
	}
	return nil
}

// attach makes the VolumeAttachment of the pod's PV when attach is
// required.
func (a *attacher) attach(ctx context.Context, reg *node.Registration, pod *corev1.Pod) error {
	r := a.r
	f := newFacts(r.env.info, r.env.cfg.CSIDriver, r.env.cfg.Host)
	if !f.attach {
		return nil
	}
	pv, ok := r.cluster.PersistentVolume(pvName)
	if !ok || !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil }) {
		return nil
	}
	driver, nodeName := r.env.info.Name, r.env.cfg.NodeName
	name := node.AttachmentName(pv.Spec.CSI.VolumeHandle, driver, nodeName)
	if _, exists := r.cluster.VolumeAttachment(name); exists {
		return nil
	}
	var metadata map[string]string
	if r.env.info.Publishes() {
		req := &csi.ControllerPublishVolumeRequest{
			VolumeId:         pv.Spec.CSI.VolumeHandle,
			NodeId:           reg.NodeID,
			VolumeCapability: r.env.controllerCapability(pv.Spec.AccessModes[0], pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock),
			VolumeContext:    maps.Clone(pv.Spec.CSI.VolumeAttributes),
		}
		cctx, cancel := a.callContext(ctx, "Attach")
		resp, err := csi.NewControllerClient(r.conn).ControllerPublishVolume(cctx, req)
		cancel()
		if err != nil {
			return failure("10", fmt.Sprintf("ControllerPublishVolume of %q to node %q returned %s: %s", req.VolumeId, req.NodeId, status.Code(err), status.Convert(err).Message()),
				"the external-attacher sets the VolumeAttachment's attachError and the kubelet's WaitForAttach fails with it; the pod never starts")
		}
		a.attached = append(a.attached, req)
		metadata = resp.GetPublishContext()
	}
	if err := r.cluster.Add(attachment(name, driver, nodeName, metadata), source); err != nil {
		return failure("", "cannot add the VolumeAttachment: "+err.Error(), "")
	}
	// The attach/detach controller reports the volume in the Node's
	// status.volumesAttached, which the kubelet checks when it has the
	// Node (an input's).
	if n, ok := r.cluster.Node(nodeName); ok {
		n.Status.VolumesAttached = append(n.Status.VolumesAttached, corev1.AttachedVolume{
			Name: corev1.UniqueVolumeName(node.UniqueVolumeName(driver, pv.Spec.CSI.VolumeHandle)),
		})
	}
	return nil
}

// Finish detaches, newest first, what Prepare attached, once the kubelet
// tore the pods down.
func (a *attacher) Finish(ctx context.Context, _ func(driver, handle string) bool) []error {
	var errs []error
	for i := len(a.attached) - 1; i >= 0; i-- {
		req := a.attached[i]
		cctx, cancel := a.callContext(ctx, "Detach")
		_, err := csi.NewControllerClient(a.r.conn).ControllerUnpublishVolume(cctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: req.VolumeId, NodeId: req.NodeId})
		cancel()
		if err != nil {
			errs = append(errs, failure("10", fmt.Sprintf("ControllerUnpublishVolume of %q from node %q returned %s: %s", req.VolumeId, req.NodeId, status.Code(err), status.Convert(err).Message()),
				"the external-attacher retries and the VolumeAttachment is never deleted, so the volume cannot attach elsewhere"))
		}
	}
	return errs
}

// callContext is one call of the external-attacher, with the kubelet's
// timeout.
func (a *attacher) callContext(ctx context.Context, op string) (context.Context, context.CancelFunc) {
	return context.WithTimeout(csiclient.WithLabels(ctx, csiclient.Labels{Component: "attacher", Operation: op, Volume: pvName}), a.r.env.cfg.Timeout)
}
