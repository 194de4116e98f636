//go:build !before1_35

package kubeletdiff

import "k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"

// mountedVolume is the pod's volume named outer in the pod spec, if it is
// in the desired state and the actual state has it mounted.
func (k *kubeletRun) mountedVolume(outer string) (cache.MountedVolume, bool) {
	v, ok := k.dsw.GetVolumeNamesForPod(k.podName)[outer]
	if !ok {
		return cache.MountedVolume{}, false
	}
	return k.asw.GetMountedVolumeForPod(k.podName, v)
}
