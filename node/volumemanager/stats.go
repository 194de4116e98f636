package volumemanager

// stats.go follows pkg/kubelet/server/stats/volume_stat_calculator.go and
// pkg/volume/csi/csi_metrics.go.

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager/cache"
)

func (k *VolumeManager) volumeStats(ctx context.Context, pod *corev1.Pod, v *csiplugin.VolumeSpec) error {
	if err := k.DriverRegistered(v.Driver); err != nil {
		return csiplugin.Transientf("%v", err)
	}
	ok, err := k.NodeSupports(ctx, csi.NodeServiceCapability_RPC_GET_VOLUME_STATS)
	if err != nil {
		return err
	}
	if !ok {
		k.Trace.Note(ctx, true, fmt.Sprintf("no GET_VOLUME_STATS: metrics are not supported by driver %s; no call", v.Driver))
		return nil
	}
	target := k.Layout.TargetPath(string(pod.UID), v.SpecName)
	if v.Block {
		// The block metrics provider's path: the global map path + podUID.
		target = k.Layout.GlobalMapPath(v.SpecName) + "/" + string(pod.UID)
	}
	resp, err := k.NodeClient.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.Handle, VolumePath: target})
	if err != nil {
		return err
	}
	// Up to 1.36, with CSIVolumeHealth, the client asks VOLUME_CONDITION
	// after the stats call, and from 1.32 a driver with it may answer
	// without usage (the code was removed in 1.37).
	conditionCapable := false
	if k.Release.Enabled(release.CSIVolumeHealth) && k.Release.AsksVolumeCondition() {
		if conditionCapable, err = k.NodeSupports(ctx, csiplugin.VolumeConditionCapability); err != nil {
			return err
		}
	}
	if resp.GetUsage() == nil && !(conditionCapable && k.Release.StatsWithoutUsageForCondition()) {
		return fmt.Errorf("failed to get usage from response. usage is nil")
	}
	for _, u := range resp.GetUsage() {
		k.Trace.Note(ctx, false, fmt.Sprintf("stats %s: used %d of %d, available %d", u.GetUnit(), u.GetUsed(), u.GetTotal(), u.GetAvailable()))
	}
	return nil
}

// VolumeStats is one round of the kubelet's volume stats calculator for a
// pod (volume_stat_calculator.go, csi_metrics.go GetMetrics): per mounted
// volume, a GET_VOLUME_STATS query and NodeGetVolumeStats{volume_id,
// volume_path} with the target path, never the staging path. It returns the
// driver's answers that the kubelet would reject.
func (k *VolumeManager) VolumeStats(ctx context.Context, pod *corev1.Pod, round int) []error {
	var errs []error
	for _, key := range k.State.PodMounts(pod) {
		m, ok := k.State.Mount(key)
		if !ok || m.Status != cache.StatusMounted {
			continue
		}
		v := m.Spec
		l := csiclient.Labels{Component: "kubelet", Operation: fmt.Sprintf("GetMetrics#%d", round), Volume: v.SpecName, Pod: podName(pod)}
		octx, cancel := k.operationContext(ctx, l)
		err := k.volumeStats(octx, pod, v)
		cancel()
		if err != nil {
			k.Trace.Warn(octx, fmt.Sprintf("volume stats of %q: %v", v.SpecName, err))
			errs = append(errs, fmt.Errorf("volume stats of %q: %w", v.SpecName, err))
		}
	}
	return errs
}
