//go:build !before1_34

package kubeletdiff

import (
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/mount-utils"

	"k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/populator"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/csimigration"
)

func newPopulator(client clientset.Interface, pods *podSource, dsw cache.DesiredStateOfWorld, asw cache.ActualStateOfWorld,
	migration csimigration.PluginManager, translator csimigration.InTreeToCSITranslator, mgr *volume.VolumePluginMgr) populator.DesiredStateOfWorldPopulator {
	return populator.NewDesiredStateOfWorldPopulator(client, loopPeriod, pods, pods, dsw, asw, migration, translator, mgr)
}

func hostMounter(host interface{ GetMounter() mount.Interface }) mount.Interface {
	return host.GetMounter()
}
