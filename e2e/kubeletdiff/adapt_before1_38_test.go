//go:build before1_38

package kubeletdiff

import (
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

func newActualStateOfWorld(nodeName types.NodeName, mgr *volume.VolumePluginMgr) cache.ActualStateOfWorld {
	return cache.NewActualStateOfWorld(nodeName, mgr)
}

func newReconciler(client clientset.Interface, loop, waitForAttach time.Duration, nodeName types.NodeName,
	dsw cache.DesiredStateOfWorld, asw cache.ActualStateOfWorld, hasAddedPods func() bool, oe operationexecutor.OperationExecutor,
	mounter mount.Interface, hu hostutil.HostUtils, mgr *volume.VolumePluginMgr, podsDir string) reconciler.Reconciler {
	return reconciler.NewReconciler(client, true /* controllerAttachDetachEnabled */, loop, waitForAttach, nodeName, dsw, asw,
		hasAddedPods, oe, mounter, hu, mgr, podsDir)
}
