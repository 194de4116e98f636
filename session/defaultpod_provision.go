package session

import (
	"context"
	"fmt"
	"slices"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// provisionDefault is run's and plan's choice for the default pod's
// persistent volume, once the driver has registered: provisioned (a
// claim of a StorageClass of the driver, CreateVolume by the simulated
// external-provisioner, DeleteVolume after the pod) when the driver's
// controller offers CREATE_DELETE_VOLUME, since a driver that makes its
// own volumes knows no made-up handle; otherwise a PV with the handle
// sim-volume-1 (or --volume-handle, which always wins). The trace says
// which, and why; keep is --keep-volumes.
func (ss *session) provisionDefault(keep bool) func(ctx context.Context, reg *node.Registration) bool {
	return func(ctx context.Context, reg *node.Registration) bool {
		return ss.chooseDefaultVolume(ctx, reg, keep)
	}
}

func (ss *session) chooseDefaultVolume(ctx context.Context, reg *node.Registration, keep bool) bool {
	if d, ok := ss.opts.cluster.CSIDriver(reg.DriverName); ok && !slices.Contains(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent) {
		return false // no persistent volume in the default pod
	}
	ok, why := ss.defaultVolumeChoice(ctx, reg.DriverName)
	lctx := csiclient.WithLabels(ctx, csiclient.Labels{Component: "default pod", Pod: "default/" + manifests.DefaultPodName})
	ss.trace.Note(lctx, false, ss.defaultVolumeText(ok, why, reg.DriverName, keep))
	return ok
}

// defaultVolumeChoice asks the sidecars whether they would provision.
func (ss *session) defaultVolumeChoice(ctx context.Context, driver string) (bool, string) {
	switch {
	case ss.opts.VolumeHandle != "":
		return false, "--volume-handle given"
	case ss.sidecars == nil:
		return false, "no external-provisioner in this command"
	}
	return ss.sidecars.Provisions(ctx, driver)
}

// defaultVolumeText is the trace's note on the choice.
func (ss *session) defaultVolumeText(provision bool, why, driver string, keep bool) string {
	if !provision {
		handle := ss.opts.VolumeHandle
		if handle == "" {
			handle = manifests.DefaultVolumeHandle
		}
		hint := "--volume-handle names one of its own"
		if ss.command == "run" && ss.opts.VolumeHandle == "" {
			hint += "; a controller on another socket: --controller-endpoint"
		}
		return fmt.Sprintf("%s: claim default/%s is bound to PersistentVolume %s, volumeHandle %q, not provisioned (the driver must know that volume; %s)",
			why, manifests.DefaultClaimName, manifests.DefaultPVName, handle, hint)
	}
	class := manifests.DefaultClassName + ", made here"
	if sc := ss.opts.cluster.DriverClass(driver); sc != nil {
		class = sc.Name + ", " + ss.opts.cluster.SourceOf("StorageClass", "", sc.Name).String()
	}
	after := "its volume deleted after the pod"
	if keep {
		after = "its volume kept after the pod (--keep-volumes)"
	}
	return fmt.Sprintf("%s: claim default/%s (%s, StorageClass %s) is provisioned, %s; --volume-handle uses a volume of your own instead",
		why, manifests.DefaultClaimName, manifests.DefaultClaimSize, class, after)
}
