package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	loadreport "github.com/csi-kubelet-sim/csi-kubelet-sim/report"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/rootdirs"
)

// maxLoadPods bounds the pods of one load run (copies and churn), so that
// a typo in --churn or --duration cannot exhaust the machine.
const maxLoadPods = 20000

type LoadOptions struct {
	CommonOptions
	EndpointFlag
	Streams
	Replicas        int
	QPS             float64
	Burst           int
	Duration        time.Duration
	Churn           float64
	ChurnLifetime   time.Duration
	Hold            time.Duration
	SharedVolumes   bool
	SyncFrequency   time.Duration
	RepublishPeriod time.Duration
	StatsPeriod     time.Duration
	Report          string
	Sidecars        SidecarOptions
}

// run runs a node's worth of pods against the driver with the
// kubelet's concurrency: pods started at a rate, their volumes mounted side
// by side with one pending operation per volume, each pod syncing and
// reporting stats on its own period, then torn down; and reports per CSI
// method what the driver did under that load.
func (o *LoadOptions) Run(ctx context.Context) error {
	defaultGC() // a long run: the heap kept near what is live (gc.go)
	o.lockAs = "load"
	createdDirs, err := o.prepare(ctx, o.Streams, o.endpoint)
	if err != nil {
		return err
	}
	defer o.Apiserver.Stop()
	return o.runPods(ctx, o.Streams, createdDirs)
}

// complete takes the files of the arguments, the driver's socket and the
// root dir.
func (o *LoadOptions) Complete(args []string) error {
	o.Filenames = FilesFrom(o.Filenames, args)
	if err := o.completeEndpoint(); err != nil {
		return err
	}
	return o.completeRootDir()
}

func (o *LoadOptions) Validate() error {
	switch {
	case o.Replicas < 0:
		return WithCode(ExitUsage, errors.New("--replicas must not be negative"))
	case o.QPS < 0 || o.Churn < 0:
		return WithCode(ExitUsage, errors.New("--qps and --churn must not be negative"))
	case o.Burst < 1:
		return WithCode(ExitUsage, errors.New("--burst must be at least 1"))
	case o.Churn > 0 && o.Duration <= 0:
		return WithCode(ExitUsage, errors.New("--churn needs --duration"))
	case o.Duration < 0 || o.Hold < 0 || o.ChurnLifetime <= 0:
		return WithCode(ExitUsage, errors.New("--duration and --hold must not be negative, --churn-lifetime must be positive"))
	}
	if o.Hold == 0 {
		o.Hold = o.Duration
	}
	return nil
}

// runPods runs the pods once the root dir is made.
func (o *LoadOptions) runPods(ctx context.Context, s Streams, createdDirs []string) error {
	ss := newQuietSession("load", &o.CommonOptions, s, o.Apiserver.Conn(&csiclient.Dialer{Endpoint: o.endpoint}), createdDirs, o.Verbose > 0)
	ss.endpoint = o.Endpoint
	page := newReportPage(ss, o.Report)
	stats := page.stats
	progress := ss.obs.LoadProgress()
	if progress == nil {
		progress = loadreport.NewProgress(nil, 0) // counts, draws nothing
	}
	ss.trace.AddSink(progress)
	plan := ss.plan(ctx, o.Hold, node.RunningSchedule{SyncFrequency: o.SyncFrequency, RepublishPeriod: o.RepublishPeriod, StatsPeriod: o.StatsPeriod})
	plan.Parallel = true
	if err := o.Sidecars.attach(ss, o.endpoint); err != nil {
		rootdirs.Remove(ss.rootDirs)
		return err
	}
	plan.Controller = o.Sidecars.controller
	plan.Schedule = func(pods []*corev1.Pod) ([]node.PodPlan, error) {
		plans, err := o.schedule(pods)
		progress.AddPods(len(plans))
		return plans, err
	}
	plan.OnPod = func(e node.PodEvent) {
		if e.Step == "gone" {
			progress.PodTornDown()
		} else {
			progress.PodMounted()
		}
	}
	ss.attachAPIServer(ctx, &plan)
	ss.header()
	out := ss.kubelet.Run(ctx, plan)
	progress.Stop()
	ss.finishAPIServer(out)
	if out.Leftovers.NothingOnDisk() {
		rootdirs.Remove(ss.rootDirs)
	}
	exit := ss.exitErr(out)
	sum := stats.Summary()
	if err := page.write(fmt.Sprintf("csi-kubelet-sim load: %s, %s", plural(out.Pods, "pod"), o.Release.Describe()), o.Apiserver.ReportHeader(ss.reportHeader(out, exit))); err != nil && exit == nil {
		exit = WithCode(ExitEnvironment, err)
	}
	ss.apiServerSummary()
	summary := ss.summaryOf(out, exit)
	summary.Load = &sum
	ss.obs.Summary(summary)
	return exit
}

// schedule is load's plan: each input pod and its copies, started at
// --qps/--burst, then the churned pods over --duration.
func (o *LoadOptions) schedule(pods []*corev1.Pod) ([]node.PodPlan, error) {
	churned := int(math.Floor(o.Churn * o.Duration.Seconds()))
	total := len(pods)*(1+o.Replicas) + churned
	if total > maxLoadPods {
		return nil, fmt.Errorf("load: %d pods (%d input pods x %d, %d churned) is over the limit of %d per run", total, len(pods), 1+o.Replicas, churned, maxLoadPods)
	}
	base := append([]*corev1.Pod(nil), pods...)
	var plans []node.PodPlan
	for _, p := range base {
		plans = append(plans, node.PodPlan{Pod: p})
	}
	for i := 1; i <= o.Replicas; i++ {
		for _, p := range base {
			r, err := o.replica(p, fmt.Sprintf("-r%d", i))
			if err != nil {
				return nil, err
			}
			plans = append(plans, node.PodPlan{Pod: r})
		}
	}
	for i := range plans {
		plans[i].At = o.arrival(i)
	}
	for i := range churned {
		r, err := o.replica(base[i%len(base)], fmt.Sprintf("-c%d", i+1))
		if err != nil {
			return nil, err
		}
		at := time.Duration(float64(i+1) / o.Churn * float64(time.Second))
		plans = append(plans, node.PodPlan{Pod: r, At: at, Lifetime: o.ChurnLifetime})
	}
	return plans, nil
}

// arrival is when the i-th pod is created under --qps and --burst (a token
// bucket that starts full, as client-go's rate limiter does).
func (o *LoadOptions) arrival(i int) time.Duration {
	if o.QPS == 0 || i < o.Burst {
		return 0
	}
	return time.Duration(float64(i-o.Burst+1) / o.QPS * float64(time.Second))
}

func (o *LoadOptions) replica(p *corev1.Pod, suffix string) (*corev1.Pod, error) {
	r, err := o.cluster.AddReplica(p, manifests.Replica{Suffix: suffix, NodeName: o.NodeName, Shared: o.SharedVolumes, AttachmentName: node.AttachmentName})
	if err != nil {
		return nil, err
	}
	r.Spec.NodeName = p.Spec.NodeName
	return r, nil
}
