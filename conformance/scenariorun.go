package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
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
	// attacher is the attach step of the kubelet's plan.
	attacher *attacher
	// out is what the kubelet's Run did; nil before it ran.
	out     *node.Outcome
	selinux bool

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
	r.addInput()
	r.selinux = seLinux || r.env.cfg.Host.SELinux
	r.kubelet = node.New(node.Config{
		RootDir:  r.root,
		NodeName: r.env.cfg.NodeName,
		Timeout:  r.env.cfg.Timeout,
		Release:  r.env.cfg.Release,
		SELinux:  node.SELinux{Enabled: r.selinux},
		Cluster:  r.cluster,
		Conn:     r.env.cfg.Conn,
		Trace:    r.trace,
		// The token path of `run` over the scenario's own objects (its
		// ServiceAccounts and Nodes), with the run's one signing key.
		TokenOptions: r.env.tokenOptions(),
		// The scenario's root dir is the run's own: journaled, so that
		// the `cleanup` of an interrupted run removes it too once it is
		// empty.
		Adopted: []string{r.root},
	})
}

// addInput copies the input's ServiceAccount of the scenario's pod and
// the Node into the scenario's objects.
func (r *scenarioRun) addInput() {
	in := r.env.cfg.Input
	if in == nil {
		return
	}
	if sa, ok := in.ServiceAccount(namespace, serviceAccount); ok {
		_ = r.cluster.Add(sa.DeepCopy(), source)
	}
	if n, ok := in.Node(r.env.cfg.NodeName); ok {
		_ = r.cluster.Add(n.DeepCopy(), source)
	}
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
	spec.readOnly = spec.inline && r.env.cfg.InlineReadOnly
	spec.class = r.env.cfg.Class
	attrs := r.env.cfg.InlineAttributes
	if attrs == nil {
		attrs = r.env.cfg.VolumeAttributes
	}
	pod, err := buildPod(r.cluster, r.sc.Name, r.env.info.Name, r.env.cfg.NodeName, vol, attrs, spec)
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

// teardown turns the kubelet's teardown (Run's, after the pods were
// deleted, the volumes detached and the root dir cleaned up) into
// findings, and checks that nothing is left under the root dir.
func (r *scenarioRun) teardown(ctx context.Context) {
	if r.out != nil {
		r.teardownFindings(r.out)
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

// teardownFindings are the failures of the kubelet's teardown and what it
// left.
func (r *scenarioRun) teardownFindings(out *node.Outcome) {
	for _, err := range out.TeardownErrs {
		if f := (*finding)(nil); errors.As(err, &f) {
			r.failures = append(r.failures, f.Failure)
			continue
		}
		r.fail("12", fmt.Sprintf("teardown failed: %v", err),
			"the kubelet retries the teardown forever and the pod stays Terminating")
	}
	left := out.Leftovers
	if left == nil {
		return
	}
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
