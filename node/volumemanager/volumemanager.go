// Package volumemanager is the kubelet's volume manager
// (pkg/kubelet/volumemanager/volume_manager.go) with the operations it runs
// through the operation executor: the operation generator's MountVolume,
// MapVolume, UnmountVolume and UnmountDevice over the CSI plugin
// (lifecycle.go, mapvolume.go: pkg/volume/util/operationexecutor/operation_generator.go),
// WaitForAttach (lifecycle.go), registration (pluginmanager.go,
// pkg/kubelet/pluginmanager), NodeExpandVolume at mount and in use
// (expand.go, expandinuse.go: pkg/volume/util/operationexecutor/node_expander.go),
// the reconciler's remounts of requiresRepublish volumes and their retries
// (republish.go, remountretry.go, retry.go: pkg/kubelet/volumemanager/reconciler),
// pod syncs and volume stats while pods run (running.go, stats.go:
// pkg/kubelet/server/stats/volume_stat_calculator.go), the SELinux label
// of the desired state (selinuxlabel.go,
// pkg/kubelet/volumemanager/cache/desired_state_of_world.go), the paths a
// volume owns (ownership.go), the orphaned pod dirs' cleanup and what a
// run leaves behind (cleanup.go, pkg/kubelet/kubelet_volumes.go), and the
// hints a failure's event carries (explain.go).
//
// It imports node/volumemanager/cache, node/operationexecutor, node/csi,
// node/rootdir and node/release; the Kubelet (node) embeds its VolumeManager.
package volumemanager

import (
	"context"
	"time"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager/cache"
)

// VolumeManager is the kubelet's volume manager (volume_manager.go): the
// actual state of the world and the operations over the CSI plugin, with
// the bounds the kubelet's Config sets on them.
type VolumeManager struct {
	*csiplugin.Plugin
	State    *cache.ActualState
	ops      *operationexecutor.Operations
	attacher *csiplugin.Attacher
	mounter  *csiplugin.Mounter
	mapper   *csiplugin.BlockMapper
	// Started is when the kubelet started: its stats analyzer ticks
	// from then (running.go).
	Started time.Time
	// timeout is the one context of each operation (csiTimeout), retry
	// the bounds of the retries of failed operations, force `cleanup
	// --force` (Config).
	timeout time.Duration
	retry   operationexecutor.Retry
	force   bool
}

// NewVolumeManager returns the volume manager of a kubelet starting now
// over the plugin p.
func NewVolumeManager(p *csiplugin.Plugin, timeout time.Duration, retry operationexecutor.Retry, force bool) *VolumeManager {
	return &VolumeManager{
		Plugin:   p,
		State:    cache.NewActualState(),
		ops:      &operationexecutor.Operations{},
		attacher: &csiplugin.Attacher{Plugin: p},
		mounter:  &csiplugin.Mounter{Plugin: p},
		mapper:   &csiplugin.BlockMapper{Plugin: p},
		Started:  time.Now(),
		timeout:  timeout,
		retry:    retry,
		force:    force,
	}
}

// SleepUntil waits until t; false when ctx ended first.
func SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
