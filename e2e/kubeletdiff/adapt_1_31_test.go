//go:build before1_32 && !before1_31

package kubeletdiff

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"k8s.io/kubernetes/pkg/volume/util"
)

func podVolumeNames(pod *corev1.Pod) []string {
	mounts, devices, _ := util.GetPodVolumeNames(pod)
	return sets.List(mounts.Union(devices))
}
