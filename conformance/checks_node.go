package conformance

// The node-side CSI rules the kubelet relies on, checked by conformance's
// own calls on the driver's socket, with the kubelet's own requests, after
// a normal stage and publish (docs/kubelet.md §12).

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// stagedVol is the default pod, mounted and running, and the kubelet's
// last NodeStageVolume (nil when the driver does not stage) and
// NodePublishVolume requests.
type stagedVol struct {
	pod     *node.RunningPod
	stage   *csi.NodeStageVolumeRequest
	publish *csi.NodePublishVolumeRequest
}

// withStagedVolume mounts the default pod and, while it runs, checks it.
func (r *scenarioRun) withStagedVolume(ctx context.Context, check func(context.Context, *scenarioRun, stagedVol)) {
	pod := r.pod(r.defaultSpec())
	r.run(ctx, pod, podRun{running: func(ctx context.Context, p *node.RunningPod) {
		v := stagedVol{pod: p}
		if cs := r.kubeletCalls("NodeStageVolume"); len(cs) > 0 {
			v.stage = cs[len(cs)-1].Request.(*csi.NodeStageVolumeRequest)
		}
		if cs := r.kubeletCalls("NodePublishVolume"); len(cs) > 0 {
			v.publish = cs[len(cs)-1].Request.(*csi.NodePublishVolumeRequest)
		}
		if v.publish == nil {
			r.fail("12", "the mount stopped before NodePublishVolume (an earlier call failed)", "the volume to reach NodePublishVolume, so that the node rules can be checked on it")
			return
		}
		check(ctx, r, v)
	}})
}

// repeatOnMount repeats a call that mounted path and checks that the mount
// stayed as it was.
func (r *scenarioRun) repeatOnMount(method, path string, call func() error) {
	before := mountStateAt(path)
	err := call()
	after := mountStateAt(path)
	if err != nil {
		r.fail("12", fmt.Sprintf("%s repeated with the kubelet's exact request returned %s: %s", method, status.Code(err), status.Convert(err).Message()),
			"the kubelet repeats it after an uncertain error (a timeout, a lost reply, a kubelet restart) and on every republish; it must succeed when already done")
		return
	}
	switch {
	case len(after.infos) > len(before.infos):
		r.fail("12", fmt.Sprintf("%s repeated stacked a second mount on %s: %s", method, r.rel([]string{path})[0], changeText(before, after)),
			"a repeated call must find the existing mount; stacked mounts survive the unmount the kubelet asks for and leak")
	case !sameMount(before, after):
		r.fail("12", fmt.Sprintf("%s repeated replaced the mount on %s: %s", method, r.rel([]string{path})[0], changeText(before, after)),
			"a repeated call must leave the existing mount, which the pod is using")
	default:
		r.note("%s repeated: OK, mounts at the path unchanged (%d)", method, len(after.infos))
	}
}

func checkStageIdempotent(ctx context.Context, r *scenarioRun) {
	r.withStagedVolume(ctx, checkStageIdempotentStaged)
}

func checkStageIdempotentStaged(ctx context.Context, r *scenarioRun, v stagedVol) {
	stage := v.stage
	if stage == nil {
		r.fail("11", "the mount stopped before NodeStageVolume although the driver has STAGE_UNSTAGE_VOLUME (an earlier call failed)", "NodeStageVolume to run, so that it can be checked")
		return
	}
	r.repeatOnMount("NodeStageVolume", stage.GetStagingTargetPath(), func() error {
		c, cctx, cancel := r.direct(ctx, "Repeat")
		defer cancel()
		_, err := c.NodeStageVolume(cctx, proto.Clone(stage).(*csi.NodeStageVolumeRequest))
		return err
	})
}

func checkPublishIdempotent(ctx context.Context, r *scenarioRun) {
	r.withStagedVolume(ctx, checkPublishIdempotentStaged)
}

func checkPublishIdempotentStaged(ctx context.Context, r *scenarioRun, v stagedVol) {
	publish := v.publish
	r.repeatOnMount("NodePublishVolume", publish.GetTargetPath(), func() error {
		c, cctx, cancel := r.direct(ctx, "Repeat")
		defer cancel()
		_, err := c.NodePublishVolume(cctx, proto.Clone(publish).(*csi.NodePublishVolumeRequest))
		return err
	})
}

func (r *scenarioRun) unpublish(ctx context.Context, publish *csi.NodePublishVolumeRequest) error {
	c, cctx, cancel := r.direct(ctx, "Unpublish")
	defer cancel()
	_, err := c.NodeUnpublishVolume(cctx, &csi.NodeUnpublishVolumeRequest{VolumeId: publish.GetVolumeId(), TargetPath: publish.GetTargetPath()})
	return err
}

func checkUnpublishRemovesTarget(ctx context.Context, r *scenarioRun) {
	r.withStagedVolume(ctx, checkUnpublishRemovesTargetStaged)
}

func checkUnpublishRemovesTargetStaged(ctx context.Context, r *scenarioRun, v stagedVol) {
	publish := v.publish
	target := publish.GetTargetPath()
	if !r.unpublishPublished(ctx, publish) {
		return
	}
	if _, err := os.Lstat(target); err == nil {
		r.fail("1.7", fmt.Sprintf("NodeUnpublishVolume returned OK but the target %s %s", r.rel([]string{target})[0], describePath(target)),
			"CSI has the driver delete the target; the kubelet removes it itself only when it is unmounted and empty, else the pod's directory stays behind")
		return
	}
	r.note("NodeUnpublishVolume unmounted and removed the target")
}

func checkUnpublishIdempotent(ctx context.Context, r *scenarioRun) {
	r.withStagedVolume(ctx, checkUnpublishIdempotentStaged)
}

func checkUnpublishIdempotentStaged(ctx context.Context, r *scenarioRun, v stagedVol) {
	publish := v.publish
	if !r.unpublishPublished(ctx, publish) {
		return
	}
	if err := r.unpublish(ctx, publish); err != nil {
		r.fail("12", fmt.Sprintf("NodeUnpublishVolume repeated on an unpublished target returned %s: %s", status.Code(err), status.Convert(err).Message()),
			"the kubelet repeats NodeUnpublishVolume after a lost reply, and for uncertain mounts that never happened; any error fails its TearDown and the pod stays Terminating")
		return
	}
	if ms, _ := mountsAt(publish.GetTargetPath()); len(ms) > 0 {
		r.fail("12", fmt.Sprintf("after NodeUnpublishVolume twice the target is still mounted (mount IDs %v)", mountIDs(ms)),
			"nothing may stay mounted once unpublished")
		return
	}
	r.note("NodeUnpublishVolume repeated: OK")
}

func checkUnstageIdempotent(ctx context.Context, r *scenarioRun) {
	r.withStagedVolume(ctx, checkUnstageIdempotentStaged)
}

func checkUnstageIdempotentStaged(ctx context.Context, r *scenarioRun, v stagedVol) {
	stage := v.stage
	if stage == nil {
		r.fail("11", "the mount stopped before NodeStageVolume although the driver has STAGE_UNSTAGE_VOLUME (an earlier call failed)", "NodeStageVolume to run, so that it can be checked")
		return
	}
	for _, err := range v.pod.Unmount(ctx) {
		r.fail("12", fmt.Sprintf("teardown failed: %v", err), "the kubelet retries the teardown forever and the pod stays Terminating")
	}
	if len(r.kubeletCalls("NodeUnstageVolume")) == 0 {
		r.fail("12", "the volume was never unstaged: the kubelet makes no NodeUnstageVolume while a pod's mount of it remains (an earlier NodeUnpublishVolume failed)", "NodeUnpublishVolume to succeed first, so that NodeUnstageVolume can be checked")
		return
	}
	c, cctx, cancel := r.direct(ctx, "Repeat")
	defer cancel()
	_, err := c.NodeUnstageVolume(cctx, &csi.NodeUnstageVolumeRequest{VolumeId: stage.GetVolumeId(), StagingTargetPath: stage.GetStagingTargetPath()})
	if err != nil {
		r.fail("12", fmt.Sprintf("NodeUnstageVolume repeated on an unstaged volume returned %s: %s", status.Code(err), status.Convert(err).Message()),
			"the kubelet repeats NodeUnstageVolume after a lost reply and for uncertain stages; any error marks the device uncertain and it retries forever, so the volume never detaches")
		return
	}
	if ms, _ := mountsAt(stage.GetStagingTargetPath()); len(ms) > 0 {
		r.fail("12", "after NodeUnstageVolume the staging path is still mounted", "nothing may stay mounted once unstaged")
		return
	}
	r.note("NodeUnstageVolume repeated: OK")
}

// invalidCase is one required field left out of a kubelet request.
type invalidCase struct {
	field string
	clear func(proto.Message)
}

// invalidMethod lists the required fields of one node call.
type invalidMethod struct {
	method string
	stage  bool // needs STAGE_UNSTAGE_VOLUME
	cases  []invalidCase
}

func (m invalidMethod) describe() string {
	fields := make([]string, len(m.cases))
	for i, c := range m.cases {
		fields[i] = c.field
	}
	return m.method + " without " + strings.Join(fields, ", or without ")
}

var invalidArgumentMethods = []invalidMethod{
	{method: "NodeStageVolume", stage: true, cases: []invalidCase{
		{"volume_id", func(m proto.Message) { m.(*csi.NodeStageVolumeRequest).VolumeId = "" }},
		{"staging_target_path", func(m proto.Message) { m.(*csi.NodeStageVolumeRequest).StagingTargetPath = "" }},
		{"volume_capability", func(m proto.Message) { m.(*csi.NodeStageVolumeRequest).VolumeCapability = nil }},
	}},
	{method: "NodePublishVolume", cases: []invalidCase{
		{"volume_id", func(m proto.Message) { m.(*csi.NodePublishVolumeRequest).VolumeId = "" }},
		{"target_path", func(m proto.Message) { m.(*csi.NodePublishVolumeRequest).TargetPath = "" }},
		{"volume_capability", func(m proto.Message) { m.(*csi.NodePublishVolumeRequest).VolumeCapability = nil }},
	}},
	{method: "NodeUnpublishVolume", cases: []invalidCase{
		{"volume_id", func(m proto.Message) { m.(*csi.NodeUnpublishVolumeRequest).VolumeId = "" }},
		{"target_path", func(m proto.Message) { m.(*csi.NodeUnpublishVolumeRequest).TargetPath = "" }},
	}},
	{method: "NodeUnstageVolume", stage: true, cases: []invalidCase{
		{"volume_id", func(m proto.Message) { m.(*csi.NodeUnstageVolumeRequest).VolumeId = "" }},
		{"staging_target_path", func(m proto.Message) { m.(*csi.NodeUnstageVolumeRequest).StagingTargetPath = "" }},
	}},
}

// checkInvalidArgument sends the kubelet's own request of a stage/publish
// with one required field left out at a time.
func checkInvalidArgument(ctx context.Context, r *scenarioRun, m invalidMethod) {
	r.withStagedVolume(ctx, func(ctx context.Context, r *scenarioRun, v stagedVol) { r.invalidArguments(ctx, m, v.stage, v.publish) })
}

// invalidArguments sends each of m's requests without one field.
func (r *scenarioRun) invalidArguments(ctx context.Context, m invalidMethod, stage *csi.NodeStageVolumeRequest, publish *csi.NodePublishVolumeRequest) {
	var base proto.Message
	switch m.method {
	case "NodeStageVolume":
		base = stage
	case "NodePublishVolume":
		base = publish
	case "NodeUnpublishVolume":
		base = &csi.NodeUnpublishVolumeRequest{VolumeId: publish.GetVolumeId(), TargetPath: publish.GetTargetPath()}
	case "NodeUnstageVolume":
		if stage != nil {
			base = &csi.NodeUnstageVolumeRequest{VolumeId: stage.GetVolumeId(), StagingTargetPath: stage.GetStagingTargetPath()}
		}
	}
	if base == nil || (m.stage && stage == nil) {
		r.fail("11", "the mount stopped before NodeStageVolume although the driver has STAGE_UNSTAGE_VOLUME (an earlier call failed)", "NodeStageVolume to run, so that it can be checked")
		return
	}
	var okFields []string
	for _, tc := range m.cases {
		req := proto.Clone(base)
		tc.clear(req)
		c, cctx, cancel := r.direct(ctx, "Invalid")
		var err error
		switch x := req.(type) {
		case *csi.NodeStageVolumeRequest:
			_, err = c.NodeStageVolume(cctx, x)
		case *csi.NodePublishVolumeRequest:
			_, err = c.NodePublishVolume(cctx, x)
		case *csi.NodeUnpublishVolumeRequest:
			_, err = c.NodeUnpublishVolume(cctx, x)
		case *csi.NodeUnstageVolumeRequest:
			_, err = c.NodeUnstageVolume(cctx, x)
		}
		cancel()
		if code := status.Code(err); code != codes.InvalidArgument {
			got := "OK"
			if err != nil {
				got = fmt.Sprintf("%s (%s)", code, status.Convert(err).Message())
			}
			r.fail("12", fmt.Sprintf("%s without %s returned %s, want InvalidArgument", m.method, tc.field, got),
				"CSI makes the field required; the kubelet treats InvalidArgument as a final error (it cleans up and does not wait on an uncertain operation), and a driver that accepts the request acts on something else than asked")
			continue
		}
		okFields = append(okFields, tc.field)
	}
	if len(okFields) > 0 {
		r.note("InvalidArgument without %s", strings.Join(okFields, ", "))
	}
}

// unpublishPublished unpublishes a published volume and records a failure
// when the driver refuses.
func (r *scenarioRun) unpublishPublished(ctx context.Context, publish *csi.NodePublishVolumeRequest) bool {
	if err := r.unpublish(ctx, publish); err != nil {
		r.fail("12", fmt.Sprintf("NodeUnpublishVolume of a published volume returned %s: %s", status.Code(err), status.Convert(err).Message()),
			"the kubelet's TearDown fails and the pod stays Terminating")
		return false
	}
	return true
}
