//go:build before1_38 && !before1_34

package kubeletdiff

import (
	"context"

	"k8s.io/kubernetes/pkg/kubelet/volumemanager/reconciler"
)

func runReconciler(ctx context.Context, rc reconciler.Reconciler) { rc.Run(ctx, ctx.Done()) }
