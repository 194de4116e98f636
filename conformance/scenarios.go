package conformance

import (
	"context"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance/testdriver"
)

// Scenario is one check of the driver, derived from what the CSIDriver
// object (or the driver) says it does.
type Scenario struct {
	Name string
	// Checks says what the scenario checks, in one sentence.
	Checks string
	// Section is the docs/kubelet.md section the rule comes from.
	Section string
	// Skip is why the scenario does not apply to this driver; empty when
	// it runs.
	Skip string
	// KubeletSpecific: only a kubelet asks this of a driver (csi-sanity,
	// which knows the CSI spec alone, has no such check).
	KubeletSpecific bool
	// UsesPV: the scenario mounts the PersistentVolume.
	UsesPV bool
	// AfterOthers: the scenario looks at the whole run, so it runs once
	// every other scenario has ended.
	AfterOthers bool
	run         func(ctx context.Context, r *scenarioRun)
}

// facts are what Derive decides from.
type facts struct {
	info       *DriverInfo
	obj        *storagev1.CSIDriver
	host       Host
	persistent bool // the kubelet accepts PersistentVolumes of the driver
	ephemeral  bool // ... and inline volumes
	attach     bool // attach is required (no object, or attachRequired: true)
}

func newFacts(info *DriverInfo, obj *storagev1.CSIDriver, host Host) facts {
	f := facts{info: info, obj: obj, host: host, persistent: true, attach: true}
	if obj != nil {
		f.persistent = slices.Contains(obj.Spec.VolumeLifecycleModes, storagev1.VolumeLifecyclePersistent)
		f.ephemeral = slices.Contains(obj.Spec.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral)
		f.attach = obj.Spec.AttachRequired == nil || *obj.Spec.AttachRequired
	}
	return f
}

func isTrue(b *bool) bool { return b != nil && *b }

// noObject is the reason for skipping a scenario whose feature only a
// CSIDriver object turns on.
func noObject(field, section string) string {
	return fmt.Sprintf("no CSIDriver object given: the kubelet does this only when the CSIDriver has %s (docs/kubelet.md §%s); give -f csidriver.yaml to check it", field, section)
}

// Derive returns every scenario in a fixed order, each either to run or
// with the reason it does not apply. With obj nil the kubelet behaves as
// it does when no CSIDriver object exists: attach required, persistent
// volumes only, no pod info, no tokens, no republish, no SELinux mount.
func Derive(info *DriverInfo, obj *storagev1.CSIDriver, host Host) []Scenario {
	return derive(info, obj, host, nil)
}

// derive is Derive with the test driver definition's declarations, which
// select the scenarios no CSI answer can (block volumes).
func derive(info *DriverInfo, obj *storagev1.CSIDriver, host Host, def *testdriver.Definition) []Scenario {
	d := &deriver{info: info, obj: obj, f: newFacts(info, obj, host), def: def}
	d.lifecycle()
	d.podInfoAndTokens()
	d.republishSELinuxFSGroup()
	d.attach()
	d.blockAndExpansion()
	d.nodeRules()
	return d.out
}

// deriver collects the scenarios Derive gives, area by area.
type deriver struct {
	info *DriverInfo
	obj  *storagev1.CSIDriver
	f    facts
	def  *testdriver.Definition // nil without --testdriver
	out  []Scenario
}

func (d *deriver) add(s Scenario, skip string) {
	s.Skip = skip
	d.out = append(d.out, s)
}

// lifecycle: registration and each lifecycle mode.
func (d *deriver) lifecycle() {
	obj, f, add := d.obj, d.f, d.add
	add(Scenario{Name: "registration/node-info", Section: "13", KubeletSpecific: true,
		Checks: "NodeGetInfo at registration: node_id set, accessible_topology valid as Node labels",
		run:    checkNodeInfo}, "")

	// Lifecycle modes.
	skip := ""
	if !f.persistent {
		skip = fmt.Sprintf("the CSIDriver's volumeLifecycleModes %q do not include Persistent: the kubelet refuses PersistentVolumes of this driver (docs/kubelet.md §2)", obj.Spec.VolumeLifecycleModes)
	}
	add(Scenario{Name: "lifecycle/persistent", Section: "11", KubeletSpecific: true, UsesPV: true,
		Checks: "a PersistentVolume through the kubelet's flow: stage, publish, unpublish, unstage, nothing left",
		run:    checkLifecyclePersistent}, skip)
	switch {
	case obj == nil:
		skip = "no CSIDriver object given: the kubelet refuses inline volumes of a driver without one (docs/kubelet.md §2); give -f csidriver.yaml with volumeLifecycleModes [Ephemeral] to check them"
	case !f.ephemeral:
		skip = fmt.Sprintf("the CSIDriver's volumeLifecycleModes %q do not include Ephemeral: the kubelet refuses inline volumes of this driver (docs/kubelet.md §2)", obj.Spec.VolumeLifecycleModes)
	default:
		skip = ""
	}
	add(Scenario{Name: "lifecycle/ephemeral", Section: "2", KubeletSpecific: true,
		Checks: "an inline ephemeral volume: publish without stage, the ephemeral flag, unpublish, nothing left",
		run:    checkLifecycleEphemeral}, skip)

}

// podInfoAndTokens: podInfoOnMount and tokenRequests.
func (d *deriver) podInfoAndTokens() {
	obj, f, add := d.obj, d.f, d.add
	var skip string
	// Pod info and tokens.
	switch {
	case obj == nil:
		skip = noObject("podInfoOnMount: true", "3")
	case !isTrue(obj.Spec.PodInfoOnMount):
		skip = "podInfoOnMount is false: the kubelet sends no pod info (docs/kubelet.md §3)"
	default:
		skip = ""
	}
	add(Scenario{Name: "podinfo/on-mount", Section: "3", KubeletSpecific: true, UsesPV: f.persistent,
		Checks: "podInfoOnMount: the five csi.storage.k8s.io/ keys reach NodePublishVolume and the driver still mounts",
		run:    checkPodInfo}, skip)
	inSecrets := obj != nil && isTrue(obj.Spec.ServiceAccountTokenInSecrets)
	for _, s := range []struct {
		name, where string
		secrets     bool
	}{{"tokens/volume-context", "volume_context", false}, {"tokens/secrets", "secrets", true}} {
		switch {
		case obj == nil:
			skip = noObject("tokenRequests", "4")
		case len(obj.Spec.TokenRequests) == 0:
			skip = "the CSIDriver has no tokenRequests: the kubelet sends no tokens (docs/kubelet.md §4)"
		case inSecrets && !s.secrets:
			skip = "serviceAccountTokenInSecrets is true: the kubelet puts the tokens in secrets, not in volume_context (docs/kubelet.md §4.4)"
		case !inSecrets && s.secrets:
			skip = "serviceAccountTokenInSecrets is not true: the kubelet puts the tokens in volume_context, not in secrets (docs/kubelet.md §4.4)"
		default:
			skip = ""
		}
		secrets := s.secrets
		add(Scenario{Name: s.name, Section: "4.4", KubeletSpecific: true, UsesPV: f.persistent,
			Checks: "tokenRequests: the " + s.where + " key csi.storage.k8s.io/serviceAccount.tokens is accepted and the driver still mounts",
			run:    func(ctx context.Context, r *scenarioRun) { checkTokens(ctx, r, secrets) }}, skip)
	}

}

// republishSELinuxFSGroup: requiresRepublish, seLinuxMount and
// VOLUME_MOUNT_GROUP.
func (d *deriver) republishSELinuxFSGroup() {
	info, obj, f, add := d.info, d.obj, d.f, d.add
	var skip string
	// Republish.
	switch {
	case obj == nil:
		skip = noObject("requiresRepublish: true", "5")
	case !isTrue(obj.Spec.RequiresRepublish):
		skip = "requiresRepublish is false: the kubelet never republishes (docs/kubelet.md §5)"
	default:
		skip = ""
	}
	add(Scenario{Name: "republish/same-mount", Section: "5", KubeletSpecific: true, UsesPV: f.persistent,
		Checks: "requiresRepublish: a file written into the target survives the republish, and the target is the same mount",
		run:    checkRepublish}, skip)

	// SELinux.
	switch {
	case obj == nil:
		skip = noObject("seLinuxMount: true", "6.2")
	case !isTrue(obj.Spec.SELinuxMount):
		skip = "seLinuxMount is false: the kubelet never adds a context= mount option (docs/kubelet.md §6.2)"
	case !f.persistent:
		skip = "the kubelet adds context= only to PersistentVolumes, which this CSIDriver does not allow (docs/kubelet.md §6.2)"
	default:
		skip = ""
	}
	add(Scenario{Name: "selinux/context-mount", Section: "6.3", KubeletSpecific: true, UsesPV: true,
		Checks: "seLinuxMount: the target is mounted with the context= option the kubelet sends (read from mountinfo)",
		run:    checkSELinux}, skip)

	// fsGroup delegation.
	skip = ""
	if !info.HasNode(csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP) {
		skip = "the driver does not have VOLUME_MOUNT_GROUP: the kubelet sends no volume_mount_group and changes the group itself (docs/kubelet.md §7)"
	}
	add(Scenario{Name: "fsgroup/volume-mount-group", Section: "7.1", KubeletSpecific: true, UsesPV: f.persistent,
		Checks: "VOLUME_MOUNT_GROUP: with fsGroup 4242, a process with gid 4242 and a non-root uid can create a file in the target",
		run:    checkVolumeMountGroup}, skip)

}

// attach: the VolumeAttachment and publish_context.
func (d *deriver) attach() {
	info, f, add := d.info, d.f, d.add
	var skip string
	// Attach.
	switch {
	case !f.persistent:
		skip = "only PersistentVolumes are attached, and this CSIDriver does not allow them (docs/kubelet.md §2)"
	case !f.attach:
		skip = "attachRequired is false: no VolumeAttachment, no ControllerPublishVolume, no publish_context (docs/kubelet.md §10)"
	case !info.Publishes():
		skip = "the driver has no controller with PUBLISH_UNPUBLISH_VOLUME: the external-attacher marks VolumeAttachments attached without calling it, and publish_context stays empty (docs/kubelet.md §10)"
	default:
		skip = ""
	}
	add(Scenario{Name: "attach/publish-context", Section: "10", KubeletSpecific: true, UsesPV: true,
		Checks: "ControllerPublishVolume as the external-attacher calls it; its publish_context, through the VolumeAttachment, reaches NodeStage and NodePublish; ControllerUnpublishVolume",
		run:    checkAttach}, skip)

}

// nodeRules: the node-side CSI rules the kubelet relies on, and timing.
func (d *deriver) nodeRules() {
	info, f, add := d.info, d.f, d.add
	// The node-side CSI rules the kubelet relies on.
	stageSkip := ""
	switch {
	case !f.persistent:
		stageSkip = "only PersistentVolumes are staged, and this CSIDriver does not allow them (docs/kubelet.md §2)"
	case !info.Stages():
		stageSkip = "the driver does not have STAGE_UNSTAGE_VOLUME: the kubelet never calls NodeStageVolume or NodeUnstageVolume (docs/kubelet.md §11)"
	}
	node := func(name, checks string, run func(context.Context, *scenarioRun), stage bool) {
		s := ""
		if stage {
			s = stageSkip
		}
		add(Scenario{Name: name, Section: "12", Checks: checks, UsesPV: f.persistent, run: run}, s)
	}
	node("node/stage-idempotent", "NodeStageVolume repeated with the same request: OK, and no second mount stacked on the staging path", checkStageIdempotent, true)
	node("node/publish-idempotent", "NodePublishVolume repeated with the same request: OK, and no second mount stacked on the target", checkPublishIdempotent, false)
	node("node/unpublish-removes-target", "NodeUnpublishVolume unmounts and removes the target", checkUnpublishRemovesTarget, false)
	node("node/unpublish-idempotent", "NodeUnpublishVolume repeated on an unpublished target: OK", checkUnpublishIdempotent, false)
	node("node/unstage-idempotent", "NodeUnstageVolume repeated on an unstaged volume: OK", checkUnstageIdempotent, true)
	for _, m := range invalidArgumentMethods {
		m := m
		node("node/invalid-argument/"+m.method, "InvalidArgument for "+m.describe(), func(ctx context.Context, r *scenarioRun) { checkInvalidArgument(ctx, r, m) }, m.stage)
	}

	add(Scenario{Name: "timing/half-timeout", Section: "12", KubeletSpecific: true, AfterOthers: true,
		Checks: "no call of the run took more than half of the kubelet's operation timeout",
		run:    checkTiming}, "")
}
