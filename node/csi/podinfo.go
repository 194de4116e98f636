package csi

// podinfo.go follows pkg/volume/csi/csi_util.go and csi_mounter.go: pod info
// in volume_context.

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Keys the kubelet adds to volume_context (getPodInfoAttrs in csi_util.go).
const (
	PodNameKey            = "csi.storage.k8s.io/pod.name"
	PodNamespaceKey       = "csi.storage.k8s.io/pod.namespace"
	PodUIDKey             = "csi.storage.k8s.io/pod.uid"
	ServiceAccountNameKey = "csi.storage.k8s.io/serviceAccount.name"
	EphemeralKey          = "csi.storage.k8s.io/ephemeral"
)

// podInfoAttrs are the five keys added when the CSIDriver has
// podInfoOnMount: true. The serviceAccount.name key is missing from the
// API's doc comment but sent by every release simulated.
func podInfoAttrs(pod *corev1.Pod, mode storagev1.VolumeLifecycleMode) map[string]string {
	return map[string]string{
		PodNameKey:            pod.Name,
		PodNamespaceKey:       pod.Namespace,
		PodUIDKey:             string(pod.UID),
		ServiceAccountNameKey: pod.Spec.ServiceAccountName,
		EphemeralKey:          strconv.FormatBool(mode == storagev1.VolumeLifecycleEphemeral),
	}
}

// MergeMap is mergeMap in csi_mounter.go: keys of second overwrite first,
// in place; a nil first yields second itself.
func MergeMap(first, second map[string]string) map[string]string {
	if first == nil {
		return second
	}
	for k, v := range second {
		first[k] = v
	}
	return first
}

// copyMap keeps the kubelet's in-place merge from changing the manifests'
// maps between pods and republishes.
func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
