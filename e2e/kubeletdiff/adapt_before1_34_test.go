//go:build before1_34

package kubeletdiff

import (
	"context"

	"k8s.io/mount-utils"

	"k8s.io/kubernetes/pkg/kubelet/volumemanager/reconciler"
)

func runReconciler(ctx context.Context, rc reconciler.Reconciler) { rc.Run(ctx.Done()) }

// hostMounter: the fake host has one mounter for every plugin.
func hostMounter(host interface{ GetMounter(string) mount.Interface }) mount.Interface {
	return host.GetMounter("kubernetes.io/csi")
}
