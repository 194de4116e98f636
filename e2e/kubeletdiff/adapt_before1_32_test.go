//go:build before1_32

package kubeletdiff

import (
	"context"

	"k8s.io/kubernetes/pkg/kubelet/volumemanager/populator"
)

func runPopulator(ctx context.Context, p populator.DesiredStateOfWorldPopulator) {
	p.Run(allSourcesReady{}, ctx.Done())
}
