package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	loadreport "github.com/csi-kubelet-sim/csi-kubelet-sim/report"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
)

// Run is the run of the kubelet the control plane is attached to.
type Run struct {
	Trace *csiclient.Trace
	// Sidecars are the run's provisioner and attacher; nil: none.
	Sidecars *sidecars.Controllers
}

// Attach follows the driver's requests in the audit log into the trace,
// and hooks the API writes of the kubelet and the controllers into the
// plan. The session tells what the control plane is first
// (Announcements).
func (o *Options) Attach(ctx context.Context, run Run, plan *node.Plan) {
	if o.cp == nil {
		return
	}
	o.tokens.traceTo(run.Trace)
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o.stopTail = cancel
	driverCtx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "driver", Operation: "API request"})
	o.tail = o.cp.TailAudit(tctx, o.identity.User, func(r cluster.Request) {
		run.Trace.Note(driverCtx, false, r.String()+" at "+r.Time.Format("15:04:05.000"))
	})
	apiCtx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "kubelet", Operation: "API server"})
	o.node = &cluster.NodeSide{CP: o.cp, Inner: plan.Controller, NodeName: o.cfg.NodeName,
		StartNodeUID: registeredNodeUID(o.cfg.Cluster, o.cfg.NodeName), OwnerFromLiveNode: o.cfg.Release.CSINodeOwnerFromLiveNode(),
		Note:    func(s string) { run.Trace.Note(apiCtx, false, s) },
		Created: func() []cluster.Request { o.tail.Poll(); return o.tail.Requests() },
		Done:    o.Stop,
	}
	plan.Controller = o.node
	if run.Sidecars != nil {
		// The provisioner's PV and the attacher's VolumeAttachment go to
		// the API server too: a driver that reads them finds them.
		ctlCtx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "controllers", Operation: "API server"})
		run.Sidecars.WriteTo(&cluster.ControllerWrites{CP: o.cp, Note: func(s string) { run.Trace.Note(ctlCtx, false, s) }})
	}
	admit := plan.AdmitDefaultPod
	plan.AdmitDefaultPod = func(pod *corev1.Pod) error {
		if admit != nil {
			if err := admit(pod); err != nil {
				return err
			}
		}
		return o.createDefaultPod(ctx, pod)
	}
	if schedule := plan.Schedule; schedule != nil {
		plan.Schedule = func(pods []*corev1.Pod) ([]node.PodPlan, error) {
			plans, err := schedule(pods)
			if err != nil {
				return plans, err
			}
			return plans, o.createScheduled(ctx, plans)
		}
	}
	o.onMounted(ctx, plan, o.node, run.Trace)
}

// Announcements say what the control plane is, what the input became
// and who the driver is.
func (o *Options) Announcements() []string {
	version := o.cp.Version
	if version == "" {
		version = "(release unknown)"
	}
	lines := []string{fmt.Sprintf("API server: kube-apiserver %s on etcd at %s, up in %.1fs (CA %s)", version, o.cp.URL, o.cp.StartUp.Seconds(), o.cp.CAFile)}
	if o.skew != "" {
		lines = append(lines, "API server warning: "+o.skew)
	}
	for _, n := range o.applied.Notes {
		lines = append(lines, "API server: "+n)
	}
	for _, w := range o.applied.Warnings {
		lines = append(lines, "API server warning: "+w)
	}
	lines = append(lines, fmt.Sprintf("API server: %d input objects created through the API; the kubelet reads them back (server-set UIDs)", len(o.applied.Objects)),
		fmt.Sprintf("API server: the driver's kubeconfig is %s, as %s: %s", o.identity.Kubeconfig, o.identity.User, o.identity.Why))
	return lines
}

// onMounted writes each pod's status, as the kubelet does, once its
// volumes are mounted.
func (o *Options) onMounted(ctx context.Context, plan *node.Plan, ns *cluster.NodeSide, trace *csiclient.Trace) {
	onPod := plan.OnPod
	plan.OnPod = func(e node.PodEvent) {
		if onPod != nil {
			onPod(e)
		}
		if e.Step == "mounted" {
			if err := ns.PodRunning(o.cfg.Teardown(ctx), e.Pod); err != nil {
				trace.Warn(context.Background(), fmt.Sprintf("API server: status of Pod %s/%s: %v", e.Pod.Namespace, e.Pod.Name, err))
			}
		}
	}
}

// createDefaultPod creates the default pod (made by the kubelet side when
// the input has none) through the API and takes the server's version.
func (o *Options) createDefaultPod(ctx context.Context, pod *corev1.Pod) error {
	c := o.cfg.Cluster
	d, err := document(c, pod)
	if err != nil {
		return err
	}
	d.Source = "the default pod"
	docs, err := defaultPodClaims(c, pod)
	if err != nil {
		return err
	}
	applied, err := o.cp.Apply(ctx, append(docs, d), cluster.ApplyOptions{NodeName: o.cfg.NodeName})
	if err != nil {
		return apiserverError(err)
	}
	if err := readBack(c, applied.Objects); err != nil {
		return err
	}
	if p, ok := c.Pod(pod.Namespace, pod.Name); ok {
		*pod = *p
	}
	return nil
}

// defaultPodClaims are the provisioned default volume's claim and the
// StorageClass made for it (not the input's, created already): the
// provisioner's PV binds the claim the API server has.
func defaultPodClaims(c *manifests.Cluster, pod *corev1.Pod) ([]cluster.Document, error) {
	var objs []any
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim, ok := c.PersistentVolumeClaim(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if !ok || claim.Spec.StorageClassName == nil || c.SourceOf("PersistentVolumeClaim", claim.Namespace, claim.Name) != manifests.DefaultPodSource {
			continue
		}
		if sc, ok := c.StorageClass(*claim.Spec.StorageClassName); ok && c.SourceOf("StorageClass", "", sc.Name) == manifests.DefaultPodSource {
			objs = append(objs, sc)
		}
		objs = append(objs, claim)
	}
	var docs []cluster.Document
	for _, obj := range objs {
		d, err := document(c, obj)
		if err != nil {
			return nil, err
		}
		d.Source = "the default pod"
		docs = append(docs, d)
	}
	return docs, nil
}

// createScheduled creates the pods a schedule added (load's copies and
// churned pods) through the API, as a controller would, and takes the
// server's version of each.
func (o *Options) createScheduled(ctx context.Context, plans []node.PodPlan) error {
	created := map[string]bool{}
	for _, obj := range o.applied.Objects {
		if obj.APIVersion() == "v1" && obj.Kind() == "Pod" {
			created[obj.Key()] = true
		}
	}
	for _, pp := range plans {
		if created[pp.Pod.Namespace+"/"+pp.Pod.Name] {
			continue
		}
		d, err := document(o.cfg.Cluster, pp.Pod)
		if err != nil {
			return err
		}
		d.Source = "a copy of an input pod"
		applied, err := o.cp.Apply(ctx, []cluster.Document{d}, cluster.ApplyOptions{NodeName: o.cfg.NodeName})
		if err != nil {
			return apiserverError(err)
		}
		if err := applied.Objects[0].Into(pp.Pod); err != nil {
			return err
		}
	}
	return nil
}

// Finish stops the control plane (if the teardown did not) and, when the
// run left nothing on disk, removes the simulator's dir it lived in if
// nothing else is there: then the session removes the root dir it made
// (true).
func (o *Options) Finish(out *node.Outcome) (leftNothing bool) {
	if o.cp == nil {
		return false
	}
	o.Stop()
	if out == nil || out.Leftovers.NothingOnDisk() {
		o.removeDir()
		return true
	}
	return false
}

// removeDir removes the simulator's dir under the root dir, where the
// control plane lived, when nothing else is there.
func (o *Options) removeDir() {
	_ = os.Remove(filepath.Join(o.cfg.RootDir, ".csi-kubelet-sim"))
}

// DriverRequests are the driver's requests to the API server, and what
// it created or changed.
type DriverRequests struct {
	DriverUser, DriverIdentity string
	Requests                   []cluster.Request
	Changed                    []string // "verb object" of those that wrote
}

// DriverRequests lists what the driver asked the API server; false when
// the audit log was not followed.
func (o *Options) DriverRequests() (DriverRequests, bool) {
	if o.tail == nil {
		return DriverRequests{}, false
	}
	reqs := o.tail.Requests()
	var changed []string
	for _, r := range reqs {
		if r.Changes() {
			changed = append(changed, r.Verb+" "+r.Object())
		}
	}
	return DriverRequests{DriverUser: o.identity.User, DriverIdentity: o.identity.Why, Requests: reqs, Changed: changed}, true
}

// driverConn is the driver's connection with the audit log read after
// every call, before the kubelet records it: the driver's API requests
// made while it handled a call are printed before the call's line.
type driverConn struct {
	grpc.ClientConnInterface
	o *Options
}

func (c driverConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	err := c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
	if c.o.tail != nil {
		c.o.tail.Poll()
	}
	return err
}

// Conn wraps the driver's connection when the mode is on.
func (o *Options) Conn(c grpc.ClientConnInterface) grpc.ClientConnInterface {
	if !o.Enabled {
		return c
	}
	return driverConn{ClientConnInterface: c, o: o}
}

// ReportHeader adds the driver's identity and API requests to the
// --report page's header.
func (o *Options) ReportHeader(h loadreport.Header) loadreport.Header {
	if o.tail == nil {
		return h
	}
	h.APIIdentity = o.identity.User + " (" + o.identity.Why + ")"
	for _, r := range o.tail.Requests() {
		h.APIRequests = append(h.APIRequests, r.Time.Format("15:04:05.000")+" "+r.String())
	}
	return h
}

// registeredNodeUID is the UID of the Node the kubelet registered on
// start (the API server's, put into the cluster by Options.Start).
func registeredNodeUID(c *manifests.Cluster, name string) types.UID {
	if n, ok := c.Node(name); ok {
		return n.UID
	}
	return ""
}
