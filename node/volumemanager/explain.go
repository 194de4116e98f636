package volumemanager

// explain.go: the simulator's hints beside an operation's result (why no
// SELinux mount, no pod info, no attachment); they are not the kubelet's.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
)

// The trace says why a rule a user expects did not fire: a missing
// context= option, pod info or tokens, or a VolumeAttachment looked up for
// another node. The kubelet says nothing in these cases; a driver author
// staring at a request without the key needs the reason.

// explainNoSELinux tells why a volume is mounted without context=. Loud
// when the CSIDriver asked for seLinuxMount, at -v otherwise.
func (k *VolumeManager) explainNoSELinux(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec) {
	asked := k.PluginSupportsSELinuxMount(v.Driver)
	k.Trace.Note(ctx, !asked, "SELinux: no context= mount option: "+k.noSELinuxReason(pod, v, asked))
}

func (k *VolumeManager) noSELinuxReason(pod *corev1.Pod, v *csiplugin.VolumeSpec, asked bool) string {
	switch {
	case !k.Release.Enabled(release.SELinuxMountReadWriteOncePod):
		return "the SELinuxMountReadWriteOncePod feature gate is off"
	case !k.SELinux.Enabled:
		return "the node has no SELinux (no /sys/fs/selinux, or --selinux=false; --selinux=true simulates an SELinux node)"
	case !asked:
		return fmt.Sprintf("CSIDriver %s does not set seLinuxMount: true (or there is no CSIDriver object)", v.Driver)
	case len(csiplugin.ContainerSELinuxOptions(pod, v.PodVolume)) == 0:
		return fmt.Sprintf("no container that mounts volume %q has seLinuxOptions (pod or container securityContext)", v.PodVolume)
	case pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.SELinuxChangePolicy != nil &&
		*pod.Spec.SecurityContext.SELinuxChangePolicy == corev1.SELinuxChangePolicyRecursive && k.Release.Enabled(release.SELinuxChangePolicy):
		return "the pod's seLinuxChangePolicy is Recursive: the runtime relabels the files instead"
	case v.PV == nil:
		return "inline volumes never get the mount option"
	case !k.volumeSupportsSELinuxMount(v):
		if k.Release.Enabled(release.SELinuxMount) {
			return fmt.Sprintf("the PV's access modes %v: kubelet %s needs exactly one", v.PV.Spec.AccessModes, k.Release.Version)
		}
		return fmt.Sprintf("the PV's access modes %v: with the SELinuxMount gate off (kubelet %s default), only a PV with exactly [ReadWriteOncePod] gets it", v.PV.Spec.AccessModes, k.Release.Version)
	}
	return "the volume's label was set by an earlier pod without one (the first pod's label is the volume's)"
}

// explainPodInfo tells, at -v, why volume_context has no pod info or no
// tokens.
func (k *VolumeManager) explainPodInfo(ctx context.Context, v *csiplugin.VolumeSpec) {
	d, ok := k.Cluster.CSIDriver(v.Driver)
	switch {
	case !ok:
		k.Trace.Note(ctx, true, fmt.Sprintf("no CSIDriver object %q: no pod info, no tokens in the request (the kubelet reads both from it)", v.Driver))
		return
	case d.Spec.PodInfoOnMount == nil || !*d.Spec.PodInfoOnMount:
		k.Trace.Note(ctx, true, fmt.Sprintf("CSIDriver %s has podInfoOnMount unset or false: no csi.storage.k8s.io/pod.* keys", v.Driver))
	}
	if len(d.Spec.TokenRequests) == 0 {
		k.Trace.Note(ctx, true, fmt.Sprintf("CSIDriver %s has no tokenRequests: no csi.storage.k8s.io/serviceAccount.tokens", v.Driver))
	}
}

// attachHint explains a VolumeAttachment not found for a pod bound to
// another node than the kubelet's.
func (k *VolumeManager) attachHint(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != k.NodeName {
		return fmt.Sprintf(" (the pod's spec.nodeName is %q but this kubelet is node %q, which names the VolumeAttachment it reads: give --node-name %s)", pod.Spec.NodeName, k.NodeName, pod.Spec.NodeName)
	}
	return ""
}
