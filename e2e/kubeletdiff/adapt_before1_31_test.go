//go:build before1_31

package kubeletdiff

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"

	"k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/populator"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/csimigration"
	"k8s.io/kubernetes/pkg/volume/util"
)

// codeMinorVersion: 1.30 is the only release older than 1.31 the harness is
// built for (go.v1.30.14.mod); a wrong pairing of tag and module file does
// not compile.
func codeMinorVersion() string { return "1.30" }

func dialDriver(socket string) (*grpc.ClientConn, error) {
	return grpc.Dial("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func podVolumeNames(pod *corev1.Pod) []string {
	mounts, devices, _ := util.GetPodVolumeNames(pod)
	return mounts.Union(devices).List()
}

// newPopulator: keepTerminatedPodVolumes is a deprecated kubelet flag, off
// by default; the container runtime is kept, never used.
func newPopulator(client clientset.Interface, pods *podSource, dsw cache.DesiredStateOfWorld, asw cache.ActualStateOfWorld,
	migration csimigration.PluginManager, translator csimigration.InTreeToCSITranslator, mgr *volume.VolumePluginMgr) populator.DesiredStateOfWorldPopulator {
	return populator.NewDesiredStateOfWorldPopulator(client, loopPeriod, pods, pods, dsw, asw, nil, false, migration, translator, mgr)
}
