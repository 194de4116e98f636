package conformance

// A scenario as a plan of the kubelet's Run, the one `run` goes through,
// and the outcome as findings.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// podRun is what a scenario does with its pod while the kubelet runs it.
type podRun struct {
	// running is called once every volume of the pod is mounted, before
	// the kubelet's teardown.
	running func(ctx context.Context, p *node.RunningPod)
	// failed is called when a volume failed to mount, once the failure is
	// recorded, before the teardown.
	failed func()
}

// run is the scenario pod's life through the kubelet's Run, the one of
// `run`: registration (as node-driver-registrar and the kubelet do when
// the driver starts), the attach step (attacher), the mount, p.running,
// then the teardown, detach and clean-up. Failures up to the teardown are
// recorded as they come; the teardown's in teardown, once the scenario
// knows whether it was interrupted. A pod that could not be built is not
// run.
func (r *scenarioRun) run(ctx context.Context, pod *corev1.Pod, p podRun) {
	if pod == nil {
		return
	}
	r.runKubelet(ctx, []*corev1.Pod{pod}, p)
}

// registerOnly runs the kubelet without a pod: the driver registers, and
// the kubelet cleans up. It reports whether the driver registered.
func (r *scenarioRun) registerOnly(ctx context.Context) bool {
	if r.kubelet == nil {
		r.newKubelet(false)
	}
	r.runKubelet(ctx, nil, podRun{})
	return r.reg != nil
}

// runKubelet maps the scenario to the kubelet's plan and its outcome to
// findings.
func (r *scenarioRun) runKubelet(ctx context.Context, pods []*corev1.Pod, p podRun) {
	r.attacher = &attacher{r: r}
	plan := node.Plan{
		Controller:   r.attacher,
		WhileRunning: p.running,
		Teardown:     r.env.teardownContext(ctx),
		RemoveRoot:   true,
		OnPod: func(e node.PodEvent) {
			if e.Step != "failed" {
				return
			}
			for _, v := range e.Result.Volumes {
				if v.Err != nil {
					r.mountFailure(v)
				}
			}
			if p.failed != nil {
				p.failed()
			}
		},
	}
	for _, pod := range pods {
		plan.Pods = append(plan.Pods, node.PodPlan{Pod: pod})
	}
	if api := r.env.cfg.APIServer; api != nil {
		if err := api.Plan(ctx, r.cluster, &plan, r.trace, r.note); err != nil {
			r.fail("", "the API server: "+err.Error(), "the scenario's objects must be created through the API before the kubelet sees them")
			return
		}
	}
	out := r.kubelet.Run(ctx, plan)
	r.out, r.reg = out, out.Registration
	var f *finding
	switch {
	case out.RegErr != nil:
		r.fail("13", "registration failed: "+out.RegErr.Error(),
			"the kubelet calls NodeGetInfo when node-driver-registrar offers the driver and unregisters the driver when it fails; every volume then fails with `driver name "+r.env.info.Name+" not found in the list of registered CSI drivers`")
	case errors.As(out.ControllerErr, &f):
		r.failures = append(r.failures, f.Failure)
	case out.ControllerErr != nil:
		r.fail("", "the attach step failed: "+out.ControllerErr.Error(), "")
	case out.MountErr != nil:
		r.fail("", "the simulated kubelet could not resolve the pod's volumes: "+out.MountErr.Error(), "")
	}
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

// attached are the volumes the attach step published.
func (r *scenarioRun) attached() []*csi.ControllerPublishVolumeRequest {
	if r.attacher == nil {
		return nil
	}
	return r.attacher.attached
}
