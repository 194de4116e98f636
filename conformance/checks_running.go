// The checks of what the kubelet does to a mounted volume: republish,
// the SELinux mount option, and the group the pod writes with.

package conformance

// The scenarios of what only a kubelet asks of a driver: registration,
// the lifecycle modes, pod info, tokens, republish, SELinux,
// volume_mount_group, attach, and the timing of every call.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// checkRepublish: requiresRepublish over a live mount (docs/kubelet.md §5).
func checkRepublish(ctx context.Context, r *scenarioRun) {
	pod := r.pod(r.defaultSpec())
	r.run(ctx, pod, podRun{running: r.republishSameMount})
}

// republishSameMount republishes the running pod once and compares the
// target before and after.
func (r *scenarioRun) republishSameMount(ctx context.Context, p *node.RunningPod) {
	target := p.Result.Volumes[0].TargetPath
	before := mountStateAt(target)
	content := []byte("written before the republish by csi-kubelet-sim conformance\n")
	file := filepath.Join(target, republishFile)
	wrote := true
	if err := os.WriteFile(file, content, 0o644); err != nil {
		wrote = false
		r.note("cannot write into the target (%v): only the mount is compared", err)
	}
	defer os.Remove(file)
	errs := p.Republish(ctx, 1)
	if len(r.kubeletCalls("NodePublishVolume")) < 2 {
		r.fail("5", "no NodePublishVolume was repeated", "")
		return
	}
	for _, err := range errs {
		r.fail("5", fmt.Sprintf("NodePublishVolume (republish) failed: %v", err),
			"the kubelet repeats NodePublishVolume, byte for byte, on every pod sync (every 60-90 s) over the live mount; each failure is an event on the pod, and it retries with backoff")
	}
	after := mountStateAt(target)
	switch {
	case len(after.infos) > len(before.infos):
		r.fail("5", "NodePublishVolume (republish) stacked a new mount on the live target: "+changeText(before, after),
			"the kubelet republishes over a live mount; the pod keeps the mount it started with, and every republish stacks another")
	case len(before.infos) > 0 && len(after.infos) == 0:
		r.fail("5", "NodePublishVolume (republish) left the target unmounted: "+changeText(before, after),
			"the kubelet republishes over a live mount and the pod keeps using it")
	case !sameMount(before, after):
		r.fail("5", "NodePublishVolume (republish) unmounted and remounted the target: "+changeText(before, after),
			"the kubelet republishes over a live mount and the pod keeps the old one")
	case len(after.infos) == 0:
		r.note("the target is not a mount point before or after the republish")
	default:
		r.note("same mount before and after the republish: mount ID %s (unique %d)", idText(mountIDs(after.infos)), after.unique)
	}
	if !wrote {
		return
	}
	got, err := os.ReadFile(file)
	switch {
	case err != nil:
		r.fail("5", fmt.Sprintf("the file written into the target before the republish is gone after it (%v)", errors.Unwrap(err)),
			"the kubelet republishes on every pod sync; a driver that replaces the target's content loses the pod's data each time")
	case string(got) != string(content):
		r.fail("5", "the file written into the target before the republish has other content after it",
			"the kubelet republishes on every pod sync; the pod's data must survive it")
	default:
		r.note("a file written into the target before the republish is still there after it")
	}
}

// checkSELinux: the context= mount option (docs/kubelet.md §6).
func checkSELinux(ctx context.Context, r *scenarioRun) {
	pod := r.pod(podSpec{persistent: true, accessMode: corev1.ReadWriteOncePod,
		seLinux: &corev1.SELinuxOptions{Level: seLinuxLevel}})
	want := fmt.Sprintf("context=%q", seLinuxLabel)
	r.run(ctx, pod, podRun{
		running: func(_ context.Context, p *node.RunningPod) { r.checkContextMount(p.Result, want) },
		failed: func() {
			// The kubelet on a node without SELinux never sends the
			// option; a driver that passes it to mount(2) fails here only
			// because this host has no SELinux. Other failures stay
			// failures.
			if c, failed := r.lastFailedCall(); failed && !r.env.cfg.Host.SELinux && slices.Contains(mountFlags(c.Request), want) {
				r.failures = nil
				r.skip = fmt.Sprintf("this host has no SELinux (/sys/fs/selinux absent), so a kubelet here would send no context= option; informational: with mount_flags %s, %s returned %s: %s", want, c.Method, c.Code, status.Convert(c.Err).Message())
			}
		},
	})
}

// checkContextMount checks the context= option of the mounted target.
func (r *scenarioRun) checkContextMount(res *node.PodResult, want string) {
	sent := false
	for _, req := range r.publishRequests() {
		sent = sent || slices.Contains(req.GetVolumeCapability().GetMount().GetMountFlags(), want)
	}
	if !sent {
		r.skip = "the simulated kubelet sent no context= mount option (is the SELinuxMountReadWriteOncePod gate off in this kubelet version?)"
		return
	}
	target := res.Volumes[0].TargetPath
	ms, _ := mountsAt(target)
	applied, got := "", false
	if len(ms) > 0 {
		applied, got = contextOption(ms[len(ms)-1])
	}
	if !r.env.cfg.Host.SELinux {
		state := "the target is not a mount point"
		switch {
		case got:
			state = fmt.Sprintf("mountinfo shows context=%q on the target", applied)
		case len(ms) > 0:
			state = "mountinfo shows no context= option on the target"
		}
		r.skip = fmt.Sprintf("this host has no SELinux (/sys/fs/selinux absent): a context= option cannot take effect here, and a kubelet on such a node sends none; informational: the driver accepted mount_flags %s; %s", want, state)
		return
	}
	switch {
	case len(ms) == 0:
		r.fail("6.3", "NodePublishVolume got mount_flags "+want+" but the target is not a mount point, so the option was not applied",
			"with seLinuxMount: true the kubelet skips the container runtime's recursive relabel; the pod sees the volume with the wrong label")
	case !got:
		r.fail("6.3", fmt.Sprintf("NodePublishVolume got mount_flags %s but the target is mounted without a context= option (options %q, super options %q)", want, ms[len(ms)-1].Options, ms[len(ms)-1].VFSOptions),
			"with seLinuxMount: true the kubelet skips the container runtime's recursive relabel; the pod sees the volume with the wrong label (a bind mount silently drops the option)")
	case applied != seLinuxLabel:
		r.fail("6.3", fmt.Sprintf("the target is mounted with context=%q, the kubelet sent %s", applied, want),
			"the pod's processes run with the kubelet's label and cannot use the volume")
	default:
		r.note("the target is mounted with %s", want)
	}
}

// checkVolumeMountGroup: fsGroup delegated to the driver (docs/kubelet.md §7.1).
func checkVolumeMountGroup(ctx context.Context, r *scenarioRun) {
	spec := r.defaultSpec()
	g := int64(checkFSGroup)
	spec.fsGroup = &g
	pod := r.pod(spec)
	r.run(ctx, pod, podRun{running: func(_ context.Context, p *node.RunningPod) { r.checkGroupWrite(p.Result) }})
}

// checkGroupWrite checks that the pod's fsGroup can write into the
// target.
func (r *scenarioRun) checkGroupWrite(res *node.PodResult) {
	want := strconv.Itoa(checkFSGroup)
	for _, req := range r.publishRequests() {
		if got := req.GetVolumeCapability().GetMount().GetVolumeMountGroup(); got != want {
			r.fail("7.1", fmt.Sprintf("the simulated kubelet sent volume_mount_group %q, want %q", got, want), "")
			return
		}
	}
	target := res.Volumes[0].TargetPath
	file, err := groupWrite(target, checkUID, checkFSGroup)
	switch {
	case errors.Is(err, errNoWriter):
		r.skip = err.Error() + "; the group's write access was not checked (docs/kubelet.md §7.1)"
	case err != nil:
		r.fail("7.1", fmt.Sprintf("NodePublishVolume got volume_mount_group %q, but a process with gid %d (uid %d, no other groups) cannot create a file in the target (%s): %v", want, checkFSGroup, checkUID, ownerText(target), err),
			"the driver has VOLUME_MOUNT_GROUP, so the kubelet skips its own fsGroup change and relies on the driver to make the volume writable by the group")
	default:
		r.note("a process with gid %d and uid %d created a file in the target (its group: %s; target %s)", checkFSGroup, checkUID, fileGID(file), ownerText(target))
		_ = os.Remove(file)
	}
}
