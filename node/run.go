package node

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// Plan is a command's schedule for the kubelet: which pods come, when,
// for how long, and how the kubelet works on them. `run` and `plan` give
// every pod at once, one after the other; `load` gives many, at a rate,
// with the reconciler's parallelism; conformance gives each scenario's pod,
// its attach step as the Controller and its checks as WhileRunning.
// `cleanup` calls Recover, which ends with the same teardown.
type Plan struct {
	// Pods are the pods to run; none: the cluster's pods, or the default
	// pod when the cluster has none.
	Pods []PodPlan
	// DefaultPod makes the default pod when the cluster has no pod.
	DefaultPod *manifests.DefaultPod
	// ProvisionDefault tells, once the driver has registered, whether the
	// default pod's persistent volume is provisioned (a claim of a
	// StorageClass of the driver, for the plan's Controller) instead of a
	// PV with a made-up handle. Nil: never.
	ProvisionDefault func(ctx context.Context, reg *csiplugin.Registration) bool
	// AdmitDefaultPod runs the API server's admission on the default pod
	// when one is made (the input's pods went through it when loaded).
	AdmitDefaultPod func(pod *corev1.Pod) error
	// Schedule turns the cluster's pods (the default pod included) into
	// the plan's pods, once the driver has registered: `load` adds copies
	// and arrival times. Nil: every pod at once.
	Schedule func(pods []*corev1.Pod) ([]PodPlan, error)
	// Hold is how long each pod runs between mount and teardown when its
	// PodPlan says nothing: 0 not at all, < 0 until ctx ends.
	Hold time.Duration
	// Running is when the kubelet touches a running pod's volumes.
	Running volumemanager.RunningSchedule
	// Parallel: pods start as their time comes and run side by side, and a
	// pod's volumes are mounted and torn down side by side (the volume
	// manager's reconciler); otherwise one after the other, in order.
	Parallel bool
	// Teardown is the context of the teardown after ctx ended (the first
	// Ctrl-C); cancelling it (a second Ctrl-C) abandons the teardown.
	// Nil: the teardown cannot be abandoned.
	Teardown context.Context
	// KeepResults keeps every pod's result in the outcome; `load` with
	// churn keeps only the counts, so memory stays flat.
	KeepResults bool
	// OnPod is told when a pod is mounted and when it is gone.
	OnPod func(PodEvent)
	// Controller provisions and attaches before the pods, and detaches
	// and deletes after them (controller.go); nil: none.
	Controller Controller
	// WhileRunning is called for each pod once all its volumes are
	// mounted, before it runs for its Hold: what is done to a running pod
	// from outside the kubelet (conformance's checks republish, unmount
	// and call the driver themselves). Nil: nothing.
	WhileRunning func(ctx context.Context, pod *RunningPod)
	// RemoveRoot: the clean-up removes the root dir too when it leaves
	// nothing in it (conformance's root dir of one scenario).
	RemoveRoot bool
}

// PodPlan is one pod of a plan: when it is created (after the run's start)
// and how long it runs (0: Plan.Hold).
type PodPlan struct {
	Pod      *corev1.Pod
	At       time.Duration
	Lifetime time.Duration
}

// PodEvent is a pod reaching a step.
type PodEvent struct {
	Pod    *corev1.Pod
	Step   string // "mounted", "failed", "gone"
	Result *volumemanager.PodResult
}

// Outcome is what a run of the kubelet did, for the command's summary and
// exit code.
type Outcome struct {
	Registration *csiplugin.Registration
	RegErr       error
	Results      []*volumemanager.PodResult
	// Pods counts the pods run, Failed those with a volume that failed.
	Pods, Failed int
	// MountErr: a pod's volumes could not even be resolved (bad input).
	MountErr     error
	Running      volumemanager.RunningReport
	TeardownErrs []error
	Leftovers    *volumemanager.Leftovers
	// Interrupted: ctx ended before the plan did (Ctrl-C); the teardown
	// still ran. Abandoned: the teardown was cancelled too.
	Interrupted, Abandoned bool
	// HoldEnded: the interrupt came once every pod's volumes were mounted,
	// with Plan.Hold forever: the documented way to end such a run, not a
	// failure of it.
	HoldEnded bool

	// ControllerErr: the plan's Controller failed before the pods.
	ControllerErr error
}

// FirstVolumeError is the first volume that failed to mount.
func (o *Outcome) FirstVolumeError() error {
	for _, r := range o.Results {
		for _, v := range r.Volumes {
			if v.Err != nil {
				return v.Err
			}
		}
	}
	return nil
}

// Run is a kubelet's life on the node for the plan: register the driver,
// mount the pods' volumes, run the pods, tear them down (in reverse order
// without Parallel) and clean up. Everything after ctx ends is done with
// plan.Teardown.
func (k *Kubelet) Run(ctx context.Context, plan Plan) *Outcome {
	out := &Outcome{}
	reg, err := k.Register(ctx)
	out.Registration, out.RegErr = reg, err
	var mounted []*corev1.Pod
	if err == nil {
		k.warnNameMismatch(ctx, reg.DriverName)
		pods, err := k.podPlans(ctx, plan, reg)
		if err != nil {
			out.MountErr = err
		} else if !k.prepareController(ctx, plan, reg, pods, out) {
			// Nothing to mount: the claims have no volume.
		} else if plan.Parallel {
			k.runParallel(ctx, plan, pods, out)
		} else {
			mounted = k.runInOrder(ctx, plan, pods, out)
		}
	}
	out.Interrupted = ctx.Err() != nil
	slices.Reverse(mounted)
	k.teardownAll(teardownContext(ctx, plan), teardown{pods: mounted, after: k.finishController(plan), removeRoot: plan.RemoveRoot}, out)
	return out
}

// teardownContext is what the teardown runs with once ctx ended.
func teardownContext(ctx context.Context, plan Plan) context.Context {
	if plan.Teardown != nil {
		return plan.Teardown
	}
	return context.WithoutCancel(ctx)
}

// podPlans are the plan's pods, or the cluster's, or the default pod.
func (k *Kubelet) podPlans(ctx context.Context, plan Plan, reg *csiplugin.Registration) ([]PodPlan, error) {
	if len(plan.Pods) > 0 {
		return plan.Pods, nil
	}
	if len(k.Cluster.Pods()) == 0 && plan.DefaultPod != nil {
		dp := *plan.DefaultPod
		dp.Driver = reg.DriverName
		dp.Provision = plan.ProvisionDefault != nil && plan.ProvisionDefault(ctx, reg)
		dp.NodeName = k.cfg.NodeName
		dp.AttachmentName = rootdir.AttachmentName
		pod, err := k.Cluster.AddDefaultPod(dp)
		if err != nil {
			return nil, err
		}
		if plan.AdmitDefaultPod != nil {
			if err := plan.AdmitDefaultPod(pod); err != nil {
				return nil, err
			}
		}
	}
	if plan.Schedule != nil {
		return plan.Schedule(k.Cluster.Pods())
	}
	var out []PodPlan
	for _, p := range k.Cluster.Pods() {
		out = append(out, PodPlan{Pod: p})
	}
	return out, nil
}

// runInOrder mounts every pod in order, runs them together, and returns
// the pods to tear down.
func (k *Kubelet) runInOrder(ctx context.Context, plan Plan, pods []PodPlan, out *Outcome) []*corev1.Pod {
	var mounted []*corev1.Pod
	var results []*volumemanager.PodResult
	for _, pp := range pods {
		if ctx.Err() != nil {
			break
		}
		k.placePod(pp.Pod)
		res, err := k.MountPod(ctx, pp.Pod, false)
		if err != nil {
			out.MountErr = err
			break
		}
		mounted = append(mounted, pp.Pod)
		results = append(results, res)
		k.count(out, res, plan)
	}
	if out.MountErr != nil || out.Failed > 0 {
		return mounted
	}
	// Every pod is mounted: from here an interrupt ends a run held
	// forever as it is meant to end.
	defer func() { out.HoldEnded = plan.Hold < 0 && ctx.Err() != nil }()
	if ctx.Err() != nil {
		return mounted
	}
	for _, res := range results {
		k.whileRunning(ctx, plan, res)
	}
	var wg sync.WaitGroup
	for _, pp := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.RunPod(ctx, pp.Pod, lifetime(pp, plan), plan.Running, &out.Running)
		}()
	}
	wg.Wait()
	return mounted
}

// runParallel starts each pod when its time comes, runs it for its
// lifetime and tears it down, all pods side by side, as a node's kubelet
// does with its pod workers and its volume manager.
func (k *Kubelet) runParallel(ctx context.Context, plan Plan, pods []PodPlan, out *Outcome) {
	tctx := teardownContext(ctx, plan)
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, pp := range pods {
		if !volumemanager.SleepUntil(ctx, start.Add(pp.At)) {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.placePod(pp.Pod)
			res, err := k.MountPod(ctx, pp.Pod, true)
			mu.Lock()
			if err != nil && out.MountErr == nil {
				out.MountErr = err
			}
			if res != nil {
				k.count(out, res, plan)
			}
			mu.Unlock()
			if err == nil && !res.Failed() {
				k.whileRunning(ctx, plan, res)
				k.RunPod(ctx, pp.Pod, lifetime(pp, plan), plan.Running, &out.Running)
			}
			errs := k.UnmountPod(tctx, pp.Pod, true)
			mu.Lock()
			out.TeardownErrs = append(out.TeardownErrs, errs...)
			mu.Unlock()
			if plan.OnPod != nil {
				plan.OnPod(PodEvent{Pod: pp.Pod, Step: "gone"})
			}
		}()
	}
	wg.Wait()
}

// count adds a mounted pod to the outcome.
func (k *Kubelet) count(out *Outcome, res *volumemanager.PodResult, plan Plan) {
	out.Pods++
	step := "mounted"
	if res.Failed() {
		out.Failed++
		step = "failed"
	}
	if plan.KeepResults || !plan.Parallel || res.Failed() && out.Failed <= maxKeptFailures {
		out.Results = append(out.Results, res)
	}
	if plan.OnPod != nil {
		plan.OnPod(PodEvent{Pod: res.Pod, Step: step, Result: res})
	}
}

// maxKeptFailures bounds the failed pods a long `load` keeps for its
// summary.
const maxKeptFailures = 20

// placePod binds a pod without a node to this node, as the scheduler would.
func (k *Kubelet) placePod(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" {
		pod.Spec.NodeName = k.cfg.NodeName
	}
}

func lifetime(pp PodPlan, plan Plan) time.Duration {
	if pp.Lifetime != 0 {
		return pp.Lifetime
	}
	return plan.Hold
}

// warnNameMismatch says what a name mismatch does: the kubelet looks the
// CSIDriver object and the driver up by the name each volume gives, and
// knows the driver only by the name it registered.
func (k *Kubelet) warnNameMismatch(ctx context.Context, registered string) {
	lctx := csiclient.WithLabels(ctx, csiclient.Labels{Component: "kubelet", Operation: "RegisterPlugin"})
	if _, ok := k.Cluster.CSIDriver(registered); ok {
		return
	}
	for _, d := range k.Cluster.CSIDrivers() {
		if d.Name != registered {
			k.Trace.Warn(lctx, fmt.Sprintf("CSIDriver %q does not match the registered driver %q%s: the kubelet treats it as another driver's object, and volumes of %q get no CSIDriver behaviour (attach required, no pod info)", d.Name, registered, manifests.DidYouMean(d.Name, []string{registered}), registered))
		}
	}
}
