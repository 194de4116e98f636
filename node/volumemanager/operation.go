package volumemanager

// operation.go: what every operation of the operation generator shares
// (pkg/volume/util/operationexecutor/operation_generator.go): its context
// and labels, WaitForAttach before MountDevice and SetUpDevice, the event
// its failure makes, and the results it reports.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// VolumeResult is what happened to one CSI volume of a pod.
type VolumeResult struct {
	PodVolume   string
	SpecName    string
	Driver      string
	Handle      string
	Mode        storagev1.VolumeLifecycleMode
	TargetPath  string
	StagingPath string // empty when the volume is not staged
	Published   bool
	Err         error // a *VolumeError
}

// PodResult is what mounting a pod's volumes did.
type PodResult struct {
	Pod     *corev1.Pod
	Volumes []VolumeResult
	Skipped []csiplugin.SkippedVolume
}

// Failed tells whether any volume failed to mount.
func (r *PodResult) Failed() bool {
	for _, v := range r.Volumes {
		if v.Err != nil {
			return true
		}
	}
	return false
}

// operationContext is createCSIOperationContext: one timeout shared by all
// the calls of one kubelet operation, which the operations made here take.
func (k *VolumeManager) operationContext(ctx context.Context, l csiclient.Labels) (context.Context, context.CancelFunc) {
	return context.WithTimeout(csiclient.WithLabels(ctx, l), k.timeout)
}

func podName(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// waitForAttach is what the kubelet does for an attachable PV before
// MountDevice: VerifyControllerAttachedVolume (the volume in
// node.status.volumesAttached) and csiAttacher.WaitForAttach (one GET of the
// VolumeAttachment, which must be attached).
func (k *VolumeManager) waitForAttach(ctx context.Context, v *csiplugin.VolumeSpec) error {
	if node, ok := k.Cluster.Node(k.NodeName); ok {
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
		k.Trace.Note(ctx, true, "no Node object given: the attach/detach controller is taken to have reported the volume in node.status.volumesAttached")
	}
	name := rootdir.AttachmentName(v.Handle, v.Driver, k.NodeName)
	va, ok := k.Cluster.VolumeAttachment(name)
	if !ok {
		return fmt.Errorf("volume %v has GET error for volume attachment %v: volumeattachments.storage.k8s.io %q not found", v.Handle, name, name)
	}
	switch {
	case va.DeletionTimestamp != nil:
		return errors.New("volume attachment is being deleted")
	case va.Status.Attached:
		k.Trace.Note(ctx, true, fmt.Sprintf("WaitForAttach: VolumeAttachment %s is attached", name))
		return nil
	case va.Status.AttachError != nil:
		return errors.New(va.Status.AttachError.Message)
	}
	return fmt.Errorf("volume %v is not attached for volume attachment %v", v.Handle, name)
}

// volumeFailure records a failed operation as the kubelet's event. op is
// the operation ("MountVolume.SetUp") or, when it already says "failed",
// the event's whole prefix.
func (k *VolumeManager) volumeFailure(ctx context.Context, l csiclient.Labels, op string, v *csiplugin.VolumeSpec, pod *corev1.Pod, err error) error {
	ve := &csiplugin.VolumeError{Operation: op, Volume: v.SpecName, Pod: podName(pod), Kind: csiplugin.KindOf(err), Err: err}
	if strings.Contains(op, " failed") {
		ve.Operation, _, _ = strings.Cut(op, " ")
		ve.Prefix = op
	}
	k.Trace.Warn(csiclient.WithLabels(ctx, l), ve.Error()+csiplugin.KindMark(ve.Kind))
	return ve
}
