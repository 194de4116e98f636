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

// Run is a kubelet's life on the node for the plan: register the driver,
// mount the pods' volumes, run the pods, tear them down (in reverse order
// without Parallel) and clean up. Everything after ctx ends is done with
// plan.Teardown.
func (k *Kubelet) Run(ctx context.Context, plan Plan) *Outcome {
	out := &Outcome{}
	reg, err := k.vm.Register(ctx)
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
	if len(k.vm.Cluster.Pods()) == 0 && plan.DefaultPod != nil {
		dp := *plan.DefaultPod
		dp.Driver = reg.DriverName
		dp.Provision = plan.ProvisionDefault != nil && plan.ProvisionDefault(ctx, reg)
		dp.NodeName = k.cfg.NodeName
		dp.AttachmentName = rootdir.AttachmentName
		pod, err := k.vm.Cluster.AddDefaultPod(dp)
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
		return plan.Schedule(k.vm.Cluster.Pods())
	}
	var out []PodPlan
	for _, p := range k.vm.Cluster.Pods() {
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
		res, err := k.vm.MountPod(ctx, pp.Pod, false)
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
			k.vm.RunPod(ctx, pp.Pod, lifetime(pp, plan), plan.Running, &out.Running)
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
			res, err := k.vm.MountPod(ctx, pp.Pod, true)
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
				k.vm.RunPod(ctx, pp.Pod, lifetime(pp, plan), plan.Running, &out.Running)
			}
			errs := k.vm.UnmountPod(tctx, pp.Pod, true)
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
	if _, ok := k.vm.Cluster.CSIDriver(registered); ok {
		return
	}
	for _, d := range k.vm.Cluster.CSIDrivers() {
		if d.Name != registered {
			k.vm.Trace.Warn(lctx, fmt.Sprintf("CSIDriver %q does not match the registered driver %q%s: the kubelet treats it as another driver's object, and volumes of %q get no CSIDriver behaviour (attach required, no pod info)", d.Name, registered, manifests.DidYouMean(d.Name, []string{registered}), registered))
		}
	}
}
