package conformance

// The scenarios of block volumes and node expansion: what the kubelet's
// block mapper (csi_block.go) and its expansion at mount and in use
// (operation_generator.go's expandVolumeDuringMount and
// GenerateExpandInUseVolumeFunc) ask of a driver.

import (
	"context"
	"fmt"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance/testdriver"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// blockAndExpansion: a block PersistentVolume, and a PersistentVolume
// grown by the external-resizer.
func (d *deriver) blockAndExpansion() {
	info, f, def, add := d.info, d.f, d.def, d.add
	var skip string
	switch {
	case !f.persistent:
		skip = "only PersistentVolumes can be block volumes, and this CSIDriver does not allow them (docs/kubelet.md §2)"
	case def == nil:
		skip = "block is not declared: no CSI capability tells whether a driver takes block volumes (docs/kubelet.md §18); --testdriver with DriverInfo.Capabilities.block: true runs this scenario"
	case !def.Has(testdriver.CapBlock):
		skip = "the test driver definition does not declare DriverInfo.Capabilities.block (docs/kubelet.md §18)"
	case !info.Creates():
		skip = "the driver has no CREATE_DELETE_VOLUME: conformance makes the scenario's block volume by CreateVolume, as the external-provisioner would for a block claim (docs/kubelet.md §18)"
	case os.Geteuid() != 0:
		skip = "the kubelet's block steps need root (a loop device on the published file, docs/kubelet.md §18): run conformance as root"
	default:
		skip = ""
	}
	// Not UsesPV: the run's volume is a filesystem one; the scenario makes
	// its own.
	add(Scenario{Name: "lifecycle/block", Section: "18", KubeletSpecific: true,
		Checks: "a PersistentVolume with volumeMode: Block through the kubelet's block flow: stage, publish onto a file, unpublish, unstage, nothing left",
		run:    checkLifecycleBlock}, skip)

	switch {
	case !f.persistent:
		skip = "the kubelet expands only PersistentVolumes, and this CSIDriver does not allow them (docs/kubelet.md §2)"
	case !info.HasNode(csi.NodeServiceCapability_RPC_EXPAND_VOLUME):
		skip = "the driver does not have EXPAND_VOLUME in NodeGetCapabilities: the kubelet never calls NodeExpandVolume (docs/kubelet.md §15.1)"
	default:
		skip = ""
	}
	add(Scenario{Name: "expansion/node", Section: "15.1", KubeletSpecific: true, UsesPV: true,
		Checks: "a PersistentVolume the external-resizer grew (PV capacity above the claim's status.capacity): NodeExpandVolume at mount and again in use, the volume still published",
		run:    checkNodeExpansion}, skip)
}

// checkLifecycleBlock: a block PV, made by CreateVolume with a Block{}
// capability, through the whole flow, and deleted after it.
func checkLifecycleBlock(ctx context.Context, r *scenarioRun) {
	v := r.env.createVolumeOf(ctx, true)
	if v.Err != nil {
		r.fail("18", v.Err.Error(), "the external-provisioner makes a block claim's volume by CreateVolume with a Block{} volume capability")
		return
	}
	defer func() {
		if err := r.env.deleteVolume(context.WithoutCancel(ctx), v); err != nil {
			r.fail("", err.Error(), "the external-provisioner deletes the volume of a deleted claim (reclaimPolicy Delete)")
		}
	}()
	r.volume = v
	pod := r.pod(podSpec{persistent: true, block: true})
	r.run(ctx, pod, podRun{running: func(_ context.Context, p *node.RunningPod) {
		for _, v := range p.Result.Volumes {
			fi, err := os.Lstat(v.TargetPath)
			if err != nil || fi.IsDir() {
				r.fail("18", fmt.Sprintf("NodePublishVolume of the block volume %q returned OK but the target %s %s", v.SpecName, r.rel([]string{v.TargetPath})[0], describePath(v.TargetPath)),
					"for a block volume the kubelet creates the target's parent only; the driver must make the target a file (or device node) the kubelet's block mapper attaches a loop device to")
			}
		}
	}})
}

// checkNodeExpansion: the kubelet expands a grown volume at mount and in
// use; the driver must answer both and keep the volume published.
func checkNodeExpansion(ctx context.Context, r *scenarioRun) {
	pod := r.pod(podSpec{persistent: true, grown: true})
	r.run(ctx, pod, podRun{running: func(_ context.Context, p *node.RunningPod) {
		r.checkPublished(p.Result)
		for _, c := range r.kubeletCalls("NodeExpandVolume") {
			req, _ := c.Request.(*csi.NodeExpandVolumeRequest)
			resp, _ := c.Response.(*csi.NodeExpandVolumeResponse)
			if req == nil || resp == nil {
				continue
			}
			r.note("NodeExpandVolume (%s) asked for %d bytes; the driver answered capacity_bytes %d", c.Labels.Operation, req.GetCapacityRange().GetRequiredBytes(), resp.GetCapacityBytes())
		}
	}})
}
