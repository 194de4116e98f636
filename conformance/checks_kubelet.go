package conformance

// The scenarios of what only a kubelet asks of a driver: registration,
// the lifecycle modes, pod info, tokens, republish, SELinux,
// volume_mount_group, attach, and the timing of every call.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// The kubelet's volume_context keys (docs/kubelet.md §3).
const (
	keyPodName        = "csi.storage.k8s.io/pod.name"
	keyPodNamespace   = "csi.storage.k8s.io/pod.namespace"
	keyPodUID         = "csi.storage.k8s.io/pod.uid"
	keyServiceAccount = "csi.storage.k8s.io/serviceAccount.name"
	keyEphemeral      = "csi.storage.k8s.io/ephemeral"
)

// The pod's fsGroup and the unprivileged user of the volume_mount_group
// check.
const (
	checkFSGroup = 4242
	checkUID     = 65534
)

// seLinuxLevel is the level of the SELinux scenario's pod, and the label
// the kubelet makes of it with the usual container policy (docs/kubelet.md §6.1).
const (
	seLinuxLevel = "s0:c1,c2"
	seLinuxLabel = "system_u:object_r:container_file_t:" + seLinuxLevel
)

// checkNodeInfo: NodeGetInfo's node_id and topology, as the kubelet
// records them at registration (docs/kubelet.md §13).
func checkNodeInfo(ctx context.Context, r *scenarioRun) {
	if !r.registerOnly(ctx) {
		return
	}
	reg := r.reg
	r.note("node_id %q, max_volumes_per_node %d, topology %v", reg.NodeID, reg.MaxVolumesPerNode, reg.Topology)
	if reg.NodeID == "" {
		r.fail("13", "NodeGetInfo returned an empty node_id",
			"the kubelet records node_id in the Node annotation csi.volume.kubernetes.io/nodeid and in CSINode, and refuses an empty one (driverNodeID must not be empty)")
	}
	keys := slices.Sorted(maps.Keys(reg.Topology))
	for _, k := range keys {
		v := reg.Topology[k]
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			r.fail("13", fmt.Sprintf("NodeGetInfo returned the topology key %q, which is not a valid label key: %s", k, strings.Join(errs, "; ")),
				"the kubelet copies accessible_topology.segments into the Node's labels, which the API server refuses, so the driver never registers")
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			r.fail("13", fmt.Sprintf("NodeGetInfo returned the topology value %q (key %q), which is not a valid label value: %s", v, k, strings.Join(errs, "; ")),
				"the kubelet copies accessible_topology.segments into the Node's labels, which the API server refuses, so the driver never registers")
		}
	}
	if reg.MaxVolumesPerNode < 0 {
		r.note("max_volumes_per_node %d is negative: the kubelet sets no CSINode allocatable count", reg.MaxVolumesPerNode)
	}
}

// checkLifecyclePersistent: a PV through the whole flow.
func checkLifecyclePersistent(ctx context.Context, r *scenarioRun) {
	pod := r.pod(podSpec{persistent: true})
	r.run(ctx, pod, podRun{running: func(_ context.Context, p *node.RunningPod) {
		r.checkPublished(p.Result)
	}})
}

// checkLifecycleEphemeral: an inline volume through the whole flow.
func checkLifecycleEphemeral(ctx context.Context, r *scenarioRun) {
	pod := r.pod(podSpec{inline: true})
	r.run(ctx, pod, podRun{running: func(_ context.Context, p *node.RunningPod) {
		r.checkPublished(p.Result)
		for _, c := range r.kubeletCalls("NodeStageVolume") {
			r.fail("2", "the kubelet staged an inline volume: "+c.Method, "inline volumes are never staged")
		}
	}})
}

// checkPublished checks what the pod's containers need after a successful
// SetUp: a target directory the runtime can bind-mount.
func (r *scenarioRun) checkPublished(res *node.PodResult) {
	for _, v := range res.Volumes {
		fi, err := os.Lstat(v.TargetPath)
		switch {
		case err != nil || !fi.IsDir():
			r.fail("1.5", fmt.Sprintf("NodePublishVolume of the %s volume %q returned OK but the target %s %s", strings.ToLower(string(v.Mode)), v.SpecName, r.rel([]string{v.TargetPath})[0], describePath(v.TargetPath)),
				"the kubelet creates only the target's parent; the driver must create the target, and the container runtime bind-mounts it into the pod")
			continue
		}
		if ms, _ := mountsAt(v.TargetPath); len(ms) == 0 {
			r.note("%s: the target is a directory but not a mount point (the driver mounts nothing there)", v.SpecName)
		} else {
			r.note("%s: the target is mounted (%s from %s)", v.SpecName, ms[len(ms)-1].FSType, ms[len(ms)-1].Source)
		}
		if v.StagingPath != "" {
			if ms, _ := mountsAt(v.StagingPath); len(ms) == 0 {
				r.note("%s: the staging path is not a mount point", v.SpecName)
			}
		}
	}
}

// publishRequests returns the kubelet's NodePublishVolume requests per
// target path, the last of each.
func (r *scenarioRun) publishRequests() map[string]*csi.NodePublishVolumeRequest {
	out := map[string]*csi.NodePublishVolumeRequest{}
	for _, c := range r.kubeletCalls("NodePublishVolume") {
		if req, ok := c.Request.(*csi.NodePublishVolumeRequest); ok {
			out[req.GetTargetPath()] = req
		}
	}
	return out
}

// checkPodInfo: podInfoOnMount with every volume kind the driver allows.
func checkPodInfo(ctx context.Context, r *scenarioRun) {
	f := newFacts(r.env.info, r.env.cfg.CSIDriver, r.env.cfg.Host)
	pod := r.pod(podSpec{persistent: f.persistent, inline: f.ephemeral})
	r.run(ctx, pod, podRun{running: func(_ context.Context, p *node.RunningPod) {
		r.checkPodInfoSent(pod, p.Result)
	}})
}

// checkPodInfoSent checks the pod info keys of each NodePublishVolume.
func (r *scenarioRun) checkPodInfoSent(pod *corev1.Pod, res *node.PodResult) {
	reqs := r.publishRequests()
	for _, v := range res.Volumes {
		want := map[string]string{
			keyPodName: pod.Name, keyPodNamespace: pod.Namespace, keyPodUID: string(pod.UID),
			keyServiceAccount: pod.Spec.ServiceAccountName, keyEphemeral: strconv.FormatBool(v.Mode == "Ephemeral"),
		}
		got := reqs[v.TargetPath].GetVolumeContext()
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if got[k] != want[k] {
				r.fail("3", fmt.Sprintf("the simulated kubelet sent %s=%q in NodePublishVolume of %q, want %q", k, got[k], v.SpecName, want[k]), "")
			}
		}
		r.note("%s: NodePublishVolume had the five pod info keys (ephemeral=%s) and the driver answered OK", v.SpecName, want[keyEphemeral])
	}
	r.checkPublished(res)
}

// checkTokens: tokenRequests, in volume_context or in secrets.
func checkTokens(ctx context.Context, r *scenarioRun, inSecrets bool) {
	pod := r.pod(r.defaultSpec())
	r.run(ctx, pod, podRun{running: func(_ context.Context, p *node.RunningPod) {
		r.checkTokensSent(p.Result, inSecrets)
	}})
}

// checkTokensSent checks the tokens of each NodePublishVolume.
func (r *scenarioRun) checkTokensSent(res *node.PodResult, inSecrets bool) {
	where := "volume_context"
	if inSecrets {
		where = "secrets"
	}
	reqs := r.publishRequests()
	for _, v := range res.Volumes {
		req := reqs[v.TargetPath]
		m := req.GetVolumeContext()
		if inSecrets {
			m = req.GetSecrets()
		}
		val, ok := m[csiclient.TokensKey]
		if !ok {
			r.fail("4.4", fmt.Sprintf("the simulated kubelet sent no %s in NodePublishVolume %s of %q", csiclient.TokensKey, where, v.SpecName), "")
			continue
		}
		var tokens map[string]json.RawMessage
		if err := json.Unmarshal([]byte(val), &tokens); err != nil {
			r.fail("4.3", "the tokens value is not a JSON object: "+err.Error(), "")
			continue
		}
		r.note("%s: NodePublishVolume had %s in %s (audiences %q) and the driver answered OK", v.SpecName, csiclient.TokensKey, where, slices.Sorted(maps.Keys(tokens)))
	}
	r.checkPublished(res)
}

// republishFile is written into the target before the republish.
const republishFile = "csi-kubelet-sim-republish-check"

// checkAttach: ControllerPublishVolume's publish_context reaches the node
// calls through the VolumeAttachment (docs/kubelet.md §10).
func checkAttach(ctx context.Context, r *scenarioRun) {
	pod := r.pod(podSpec{persistent: true})
	r.run(ctx, pod, podRun{running: func(context.Context, *node.RunningPod) { r.checkPublishContext() }})
}

// checkPublishContext checks that ControllerPublishVolume's
// publish_context reached NodeStage and NodePublish.
func (r *scenarioRun) checkPublishContext() {
	if len(r.attached()) == 0 {
		r.fail("10", "ControllerPublishVolume was not called", "")
		return
	}
	var want map[string]string
	for _, c := range r.trace.Calls() {
		if resp, ok := c.Response.(*csi.ControllerPublishVolumeResponse); ok {
			want = resp.GetPublishContext()
		}
	}
	if len(want) == 0 {
		r.note("ControllerPublishVolume returned an empty publish_context")
	}
	check := func(method string, got map[string]string) {
		if !maps.Equal(got, want) {
			r.fail("10", fmt.Sprintf("%s got publish_context %v, ControllerPublishVolume returned %v", method, got, want),
				"the kubelet passes the VolumeAttachment's attachmentMetadata unchanged")
		}
	}
	for _, c := range r.kubeletCalls("NodeStageVolume") {
		check(c.Method, c.Request.(*csi.NodeStageVolumeRequest).GetPublishContext())
	}
	for _, c := range r.kubeletCalls("NodePublishVolume") {
		check(c.Method, c.Request.(*csi.NodePublishVolumeRequest).GetPublishContext())
	}
	r.note("publish_context %v reached the node calls; ControllerUnpublishVolume follows the teardown", want)
}

// checkTiming: no call near the kubelet's operation timeout (docs/kubelet.md §12).
func checkTiming(ctx context.Context, r *scenarioRun) {
	limit := r.env.cfg.Timeout / 2
	type slow struct {
		scenario string
		c        csiclient.Call
	}
	var all []slow
	for _, nt := range r.env.allTraces() {
		if nt.trace == r.trace {
			continue
		}
		for _, c := range nt.trace.Calls() {
			all = append(all, slow{nt.scenario, c})
		}
	}
	if len(all) == 0 {
		r.skip = "no calls were made by the selected scenarios"
		return
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].c.Duration > all[j].c.Duration })
	for _, s := range all {
		if s.c.Duration <= limit {
			break
		}
		r.fail("12", fmt.Sprintf("%s (%s) took %s, more than half of the kubelet's %s timeout", s.c.Method, s.scenario, s.c.Duration.Round(timeRound), r.env.cfg.Timeout),
			"the kubelet gives all calls of one operation a single timeout context and treats DeadlineExceeded as uncertain, then retries with backoff; a call this slow times out on a busy node")
	}
	r.note("%d calls; the slowest: %s (%s) %s", len(all), all[0].c.Method, all[0].scenario, all[0].c.Duration.Round(timeRound))
}

// lastFailedCall is the kubelet's last failed call of the scenario.
func (r *scenarioRun) lastFailedCall() (csiclient.Call, bool) {
	calls := r.trace.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Err != nil && calls[i].Labels.Component == "kubelet" {
			return calls[i], true
		}
	}
	return csiclient.Call{}, false
}

// mountFlags are the mount_flags of a NodeStage or NodePublish request.
func mountFlags(req proto.Message) []string {
	switch x := req.(type) {
	case *csi.NodeStageVolumeRequest:
		return x.GetVolumeCapability().GetMount().GetMountFlags()
	case *csi.NodePublishVolumeRequest:
		return x.GetVolumeCapability().GetMount().GetMountFlags()
	}
	return nil
}
