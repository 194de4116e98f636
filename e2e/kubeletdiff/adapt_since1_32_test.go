//go:build !before1_32

package kubeletdiff

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"k8s.io/kubernetes/pkg/kubelet/volumemanager/populator"
	"k8s.io/kubernetes/pkg/volume/util"
)

func runPopulator(ctx context.Context, p populator.DesiredStateOfWorldPopulator) {
	p.Run(ctx, allSourcesReady{})
}

// podVolumeNames is what WaitForAttachAndMount waits for: the volumes the
// pod's containers mount or use as devices.
func podVolumeNames(pod *corev1.Pod) []string {
	mounts, devices, _ := util.GetPodVolumeNames(pod, false)
	return sets.List(mounts.Union(devices))
}
