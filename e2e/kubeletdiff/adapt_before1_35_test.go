//go:build before1_35

package kubeletdiff

import "k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"

// mountedVolume is the pod's volume named outer in the pod spec, if the
// actual state has it mounted.
func (k *kubeletRun) mountedVolume(outer string) (cache.MountedVolume, bool) {
	for _, mv := range k.asw.GetMountedVolumesForPod(k.podName) {
		if mv.OuterVolumeSpecName == outer {
			return mv, true
		}
	}
	return cache.MountedVolume{}, false
}
