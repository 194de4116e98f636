package node

// plan.go: what the CLI and the engine ask of a run (Plan, PodPlan) and
// what they get back (Outcome, PodEvent); the kubelet's pod workers
// (pkg/kubelet/pod_workers.go) take the pods from the API server instead.

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
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

// Controller is what the cluster's controllers do around the kubelet for
// persistent volumes: the external-provisioner and external-attacher
// (package sidecars). Prepare runs once the driver has registered, before
// any pod's volume is mounted: it may add PVs and VolumeAttachments to the
// cluster, as the controllers do before the kubelet sees the pod. Finish
// runs after the kubelet's teardown: detach and delete, for the volumes
// the kubelet no longer uses.
type Controller interface {
	Prepare(ctx context.Context, reg *csiplugin.Registration, pods []*corev1.Pod) error
	Finish(ctx context.Context, inUse func(driver, handle string) bool) []error
}

// RunningPod is a pod whose volumes are all mounted, handed to a Plan's
// WhileRunning: what may be done to it while it runs, through the same
// kubelet that mounted it.
type RunningPod struct {
	// Result is what mounting the pod's volumes did.
	Result *volumemanager.PodResult
	k      *Kubelet
}
