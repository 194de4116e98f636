//go:build !before1_38

package kubeletdiff

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/mount-utils"

	"k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/reconciler"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/operationexecutor"
)

// From 1.38 the actual state and the reconciler take the kubelet's
// checkpoint of actuated pod volumes (allocation/state), which only
// reconstruction after a kubelet restart reads back; nil is its no-op
// checkpoint, as for a kubelet without one. The driver sees nothing of it.

func newActualStateOfWorld(nodeName types.NodeName, mgr *volume.VolumePluginMgr) cache.ActualStateOfWorld {
	return cache.NewActualStateOfWorld(nodeName, mgr, nil)
}

func newReconciler(client clientset.Interface, loop, waitForAttach time.Duration, nodeName types.NodeName,
	dsw cache.DesiredStateOfWorld, asw cache.ActualStateOfWorld, hasAddedPods func() bool, oe operationexecutor.OperationExecutor,
	mounter mount.Interface, hu hostutil.HostUtils, mgr *volume.VolumePluginMgr, podsDir string) reconciler.Reconciler {
	return reconciler.NewReconciler(client, true /* controllerAttachDetachEnabled */, loop, waitForAttach, nodeName, dsw, asw,
		hasAddedPods, oe, mounter, hu, mgr, podsDir, nil)
}

// The reconciler's Run takes only a context from 1.38.
func runReconciler(ctx context.Context, rc reconciler.Reconciler) { rc.Run(ctx) }
