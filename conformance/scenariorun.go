package conformance

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// scenarioRun is one scenario being run: its own root dir, cluster,
// kubelet and trace.
type scenarioRun struct {
	env     *runEnv
	sc      Scenario
	volume  *Volume // the PersistentVolume it mounts; nil if it needs none
	root    string
	trace   *csiclient.Trace
	conn    *csiclient.Recorder // for conformance's own calls
	cluster *manifests.Cluster
	kubelet *node.Kubelet
	reg     *node.Registration
	pods    []*corev1.Pod
	// attached are the volumes ControllerPublishVolume attached, to
	// detach after teardown.
	attached []*csi.ControllerPublishVolumeRequest
	selinux  bool

	failures []Failure
	notes    []string
	skip     string
}

// runScenario runs one scenario and always tears it down.
func (env *runEnv) runScenario(ctx context.Context, sc Scenario, index int, vol *Volume) (res Result) {
	start := time.Now()
	res = Result{Name: sc.Name, KubeletSpecific: sc.KubeletSpecific}
	if sc.Skip != "" {
		res.Status, res.Message = Skip, sc.Skip
		return res
	}
	r := &scenarioRun{
		env:    env,
		sc:     sc,
		volume: vol,
		root:   filepath.Join(env.cfg.RootDir, fmt.Sprintf("%02d-%s", index, slug(sc.Name))),
		trace:  env.newTrace(),
	}
	if env.cfg.Sink != nil {
		if s := env.cfg.Sink(sc.Name); s != nil {
			r.trace.AddSink(s)
		}
	}
	env.addTrace(sc.Name, r.trace)
	r.conn = &csiclient.Recorder{Next: env.cfg.Conn, Trace: r.trace}
	if sc.UsesPV && vol != nil && vol.Err != nil {
		r.fail("", fmt.Sprintf("the run's volume could not be made: %v", vol.Err),
			"the scenario needs a PersistentVolume, as the external-provisioner would make it; give --volume-handle for a pre-provisioned one")
	} else if err := os.Mkdir(r.root, 0o750); err != nil {
		r.fail("", fmt.Sprintf("cannot make the scenario's root dir: %v", err), "")
	} else {
		func() {
			defer func() {
				if p := recover(); p != nil {
					r.fail("", fmt.Sprintf("panic in the scenario: %v\n%s", p, debug.Stack()), "")
				}
			}()
			sc.run(ctx, r)
		}()
		if ctx.Err() != nil {
			// Interrupted: what failed did so because the calls were
			// cancelled; only the teardown's failures count.
			r.failures, r.notes = nil, append(r.notes, "interrupted while running; torn down and cleaned up")
			r.skip = "interrupted while running (torn down and cleaned up)"
		}
		tctx := env.teardownContext(ctx)
		r.teardown(tctx)
		if tctx.Err() != nil {
			// Abandoned: the teardown's failures are the interrupt's.
			env.abandoned.Store(true)
			r.failures = nil
			r.skip = "interrupted twice: its teardown was abandoned, what it made is left under " + r.root + " for `csi-kubelet-sim cleanup`"
		}
	}
	res.Duration = time.Since(start)
	for _, c := range r.trace.Calls() {
		res.Calls++
		res.CallTime += c.Duration
	}
	res.Notes = r.notes
	res.Failures = dedupe(r.failures)
	switch {
	case len(res.Failures) > 0:
		res.Status = Fail
		lines := make([]string, len(res.Failures))
		for i, f := range res.Failures {
			lines[i] = f.String()
		}
		res.Message = strings.Join(lines, "\n")
	case r.skip != "":
		res.Status, res.Message = Skip, r.skip
	default:
		res.Status = Pass
	}
	return res
}

func dedupe(fs []Failure) []Failure {
	var out []Failure
	for _, f := range fs {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// fail records a failure: what the driver did, what the kubelet needed.
func (r *scenarioRun) fail(section, did, needed string) {
	r.failures = append(r.failures, Failure{Did: did, Needed: needed, Section: section})
}

func (r *scenarioRun) note(format string, a ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, a...))
}

// newKubelet builds the scenario's kubelet and cluster; seLinux turns the
// simulated node's SELinux on whatever the host has.
func (r *scenarioRun) newKubelet(seLinux bool) {
	r.cluster = manifests.New()
	if obj := r.env.cfg.CSIDriver; obj != nil {
		_ = r.cluster.Add(obj.DeepCopy(), source)
	}
	r.selinux = seLinux || r.env.cfg.Host.SELinux
	r.kubelet = node.New(node.Config{
		RootDir:  r.root,
		NodeName: r.env.cfg.NodeName,
		Timeout:  r.env.cfg.Timeout,
		Release:  r.env.cfg.Release,
		SELinux:  node.SELinux{Enabled: r.selinux},
	}, r.cluster, r.env.cfg.Conn, r.trace)
	// The scenario's root dir is the run's own: journaled, so that the
	// `cleanup` of an interrupted run removes it too once it is empty.
	r.kubelet.AdoptRoot([]string{r.root})
	r.kubelet.SetTokenIssuer(r.env.tokens)
}

// pod builds the scenario's kubelet (if not yet) and a pod.
func (r *scenarioRun) pod(spec podSpec) *corev1.Pod {
	if r.kubelet == nil {
		r.newKubelet(spec.seLinux != nil)
	}
	vol := r.volume
	if vol == nil {
		vol = &Volume{}
	}
	pod, err := buildPod(r.cluster, r.sc.Name, r.env.info.Name, r.env.cfg.NodeName, vol, r.env.cfg.VolumeAttributes, spec)
	if err != nil {
		r.fail("", "cannot build the scenario's objects: "+err.Error(), "")
		return nil
	}
	if admit := r.env.cfg.Admit; admit != nil {
		if pod, err = admit(pod); err == nil {
			err = r.cluster.Replace(pod)
		}
		if err != nil {
			r.fail("", "admission of the scenario's pod: "+err.Error(), "the API server would not have stored the pod")
			return nil
		}
	}
	r.pods = append(r.pods, pod)
	return pod
}

// defaultSpec is a pod with the PV when the CSIDriver allows persistent
// volumes, else an inline volume.
func (r *scenarioRun) defaultSpec() podSpec {
	f := newFacts(r.env.info, r.env.cfg.CSIDriver, r.env.cfg.Host)
	if f.persistent {
		return podSpec{persistent: true}
	}
	return podSpec{inline: true}
}

// register does what node-driver-registrar and the kubelet do when the
// driver starts.
func (r *scenarioRun) register(ctx context.Context) bool {
	if r.reg != nil {
		return true
	}
	if r.kubelet == nil {
		r.newKubelet(false)
	}
	reg, err := r.kubelet.Register(ctx)
	if err != nil {
		r.fail("13", "registration failed: "+err.Error(),
			"the kubelet calls NodeGetInfo when node-driver-registrar offers the driver and unregisters the driver when it fails; every volume then fails with `driver name "+r.env.info.Name+" not found in the list of registered CSI drivers`")
		return false
	}
	r.reg = reg
	return true
}

// mount registers the driver, attaches the pod's PV as the attach/detach
// controller and external-attacher would, and mounts the pod's volumes
// through the kubelet. It reports whether every volume was published.
func (r *scenarioRun) mount(ctx context.Context, pod *corev1.Pod) (*node.PodResult, bool) {
	if pod == nil || !r.register(ctx) {
		return nil, false
	}
	if !r.attach(ctx, pod) {
		return nil, false
	}
	res, err := r.kubelet.MountPod(ctx, pod, false)
	if err != nil {
		r.fail("", "the simulated kubelet could not resolve the pod's volumes: "+err.Error(), "")
		return nil, false
	}
	for _, v := range res.Volumes {
		if v.Err != nil {
			r.mountFailure(v)
		}
	}
	return res, !res.Failed()
}

// mountFailure words a failed mount: the driver's failed call when there
// is one, and the event the kubelet would post.
func (r *scenarioRun) mountFailure(v node.VolumeResult) {
	if c, ok := r.lastFailedCall(); ok {
		r.fail("11", fmt.Sprintf("%s for the %s volume %q returned %s: %s", c.Method, strings.ToLower(string(v.Mode)), v.SpecName, c.Code, status.Convert(c.Err).Message()),
			fmt.Sprintf("the kubelet needs it to succeed for a valid request, else the pod never starts (event: %v)", v.Err))
		return
	}
	r.fail("11", fmt.Sprintf("the %s volume %q was not mounted: %v", strings.ToLower(string(v.Mode)), v.SpecName, v.Err), "the pod never starts")
}

// attach makes the VolumeAttachment of the pod's PV when attach is
// required: with PUBLISH_UNPUBLISH_VOLUME, ControllerPublishVolume as the
// external-attacher calls it, its publish_context as attachmentMetadata.
func (r *scenarioRun) attach(ctx context.Context, pod *corev1.Pod) bool {
	f := newFacts(r.env.info, r.env.cfg.CSIDriver, r.env.cfg.Host)
	if !f.attach {
		return true
	}
	pv, ok := r.cluster.PersistentVolume(pvName)
	if !ok || !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil }) {
		return true
	}
	driver, nodeName := r.env.info.Name, r.env.cfg.NodeName
	name := node.AttachmentName(pv.Spec.CSI.VolumeHandle, driver, nodeName)
	if _, exists := r.cluster.VolumeAttachment(name); exists {
		return true
	}
	var metadata map[string]string
	if r.env.info.Publishes() {
		req := &csi.ControllerPublishVolumeRequest{
			VolumeId:         pv.Spec.CSI.VolumeHandle,
			NodeId:           r.reg.NodeID,
			VolumeCapability: r.env.controllerCapability(pv.Spec.AccessModes[0]),
			VolumeContext:    maps.Clone(pv.Spec.CSI.VolumeAttributes),
		}
		cctx, cancel := context.WithTimeout(csiclient.WithLabels(ctx, csiclient.Labels{Component: "attacher", Operation: "Attach", Volume: pvName}), r.env.cfg.Timeout)
		resp, err := csi.NewControllerClient(r.conn).ControllerPublishVolume(cctx, req)
		cancel()
		if err != nil {
			r.fail("10", fmt.Sprintf("ControllerPublishVolume of %q to node %q returned %s: %s", req.VolumeId, req.NodeId, status.Code(err), status.Convert(err).Message()),
				"the external-attacher sets the VolumeAttachment's attachError and the kubelet's WaitForAttach fails with it; the pod never starts")
			return false
		}
		r.attached = append(r.attached, req)
		metadata = resp.GetPublishContext()
	}
	if err := r.cluster.Add(attachment(name, driver, nodeName, metadata), source); err != nil {
		r.fail("", "cannot add the VolumeAttachment: "+err.Error(), "")
		return false
	}
	return true
}

// teardown deletes the pods as the kubelet's reconciler does, detaches,
// cleans up, and checks that nothing is left under the root dir.
func (r *scenarioRun) teardown(ctx context.Context) {
	if r.kubelet != nil {
		for i := len(r.pods) - 1; i >= 0; i-- {
			for _, err := range r.kubelet.UnmountPod(ctx, r.pods[i], false) {
				r.fail("12", fmt.Sprintf("teardown failed: %v", err),
					"the kubelet retries the teardown forever and the pod stays Terminating")
			}
		}
		for i := len(r.attached) - 1; i >= 0; i-- {
			a := r.attached[i]
			cctx, cancel := context.WithTimeout(csiclient.WithLabels(ctx, csiclient.Labels{Component: "attacher", Operation: "Detach", Volume: pvName}), r.env.cfg.Timeout)
			_, err := csi.NewControllerClient(r.conn).ControllerUnpublishVolume(cctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: a.VolumeId, NodeId: a.NodeId})
			cancel()
			if err != nil {
				r.fail("10", fmt.Sprintf("ControllerUnpublishVolume of %q from node %q returned %s: %s", a.VolumeId, a.NodeId, status.Code(err), status.Convert(err).Message()),
					"the external-attacher retries and the VolumeAttachment is never deleted, so the volume cannot attach elsewhere")
			}
		}
		left := r.kubelet.Cleanup(context.WithoutCancel(ctx), true)
		if len(left.Mounts) > 0 {
			r.fail("1.7", "after the kubelet's NodeUnpublishVolume and NodeUnstageVolume, still mounted: "+strings.Join(r.rel(left.Mounts), ", "),
				"the kubelet expects nothing mounted once the driver unpublished and unstaged; on a real node these mounts leak")
		}
		if paths := driverPaths(left); len(paths) > 0 {
			r.fail("1.7", "the driver left "+strings.Join(r.rel(paths), ", ")+" in directories the kubelet made",
				"the kubelet removes only empty, unmounted directories, so the pod's volume directories stay behind")
		}
		for _, err := range left.Errors {
			r.fail("1.7", "clean-up after the teardown: "+err.Error(), "")
		}
	}
	if ctx.Err() != nil {
		// Abandoned: the root dir and its journal stay for `cleanup`,
		// which tears down through the driver what is still mounted.
		return
	}
	if ms, err := mountsUnder(r.root); err == nil && len(ms) > 0 {
		r.fail("1.7", "still mounted under the root dir after clean-up: "+strings.Join(r.rel(ms), ", "), "nothing may stay mounted")
		if left := detachUnder(r.root); len(left) > 0 {
			r.fail("", "cannot unmount "+strings.Join(left, ", ")+"; the root dir is kept", "")
			return
		}
	}
	if _, err := os.Lstat(r.root); err == nil {
		_ = os.RemoveAll(r.root)
	}
}

// rel shows paths relative to the scenario's root dir.
func (r *scenarioRun) rel(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if rel, err := filepath.Rel(r.root, p); err == nil && !strings.HasPrefix(rel, "..") {
			out[i] = "<root>/" + rel
		} else {
			out[i] = p
		}
	}
	return out
}

// kubeletCalls returns the kubelet's calls of a method, in order.
func (r *scenarioRun) kubeletCalls(method string) []csiclient.Call {
	var out []csiclient.Call
	for _, c := range r.trace.Calls() {
		if c.Method == method && c.Labels.Component == "kubelet" {
			out = append(out, c)
		}
	}
	return out
}

// direct returns a node client for conformance's own calls on the driver's
// socket, recorded in the scenario's trace, and a context with the
// kubelet's timeout.
func (r *scenarioRun) direct(ctx context.Context, op string) (csi.NodeClient, context.Context, context.CancelFunc) {
	cctx, cancel := context.WithTimeout(csiclient.WithLabels(ctx, csiclient.Labels{Component: "check", Operation: op}), r.env.cfg.Timeout)
	return csi.NewNodeClient(r.conn), cctx, cancel
}

// driverPaths are the files and mounts the driver left in place.
func driverPaths(l *node.Leftovers) []string {
	var out []string
	for _, x := range l.Left {
		if x.Owner == node.OwnerDriver {
			out = append(out, x.Path)
		}
	}
	return out
}
