package session

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
)

// attach tells what the control plane is, follows the driver's requests
// in the audit log into the trace, and hooks the API writes of the kubelet
// and the controllers into the plan.
func (o *ApiserverOptions) attach(ctx context.Context, ss *session, plan *node.Plan) {
	if o.cp == nil {
		return
	}
	for _, line := range o.announcements() {
		ss.announce(line)
	}
	if k, ok := ss.opts.api.(*KubeletTokenRequests); ok {
		k.TraceTo(ss.trace)
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o.stopTail = cancel
	driverCtx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "driver", Operation: "API request"})
	o.tail = o.cp.TailAudit(tctx, o.identity.User, func(r cluster.Request) {
		ss.trace.Note(driverCtx, false, r.String()+" at "+r.Time.Format("15:04:05.000"))
	})
	apiCtx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "kubelet", Operation: "API server"})
	o.node = &cluster.NodeSide{CP: o.cp, Inner: plan.Controller, NodeName: ss.opts.NodeName,
		StartNodeUID: registeredNodeUID(ss.opts.cluster, ss.opts.NodeName), OwnerFromLiveNode: ss.opts.Release.CSINodeOwnerFromLiveNode(),
		Note:    func(s string) { ss.trace.Note(apiCtx, false, s) },
		Created: func() []cluster.Request { o.tail.Poll(); return o.tail.Requests() },
		Done:    o.stop,
	}
	plan.Controller = o.node
	if ss.sidecars != nil {
		// The provisioner's PV and the attacher's VolumeAttachment go to
		// the API server too: a driver that reads them finds them.
		ctlCtx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "controllers", Operation: "API server"})
		ss.sidecars.WriteTo(&cluster.ControllerWrites{CP: o.cp, Note: func(s string) { ss.trace.Note(ctlCtx, false, s) }})
	}
	admit := plan.AdmitDefaultPod
	plan.AdmitDefaultPod = func(pod *corev1.Pod) error {
		if admit != nil {
			if err := admit(pod); err != nil {
				return err
			}
		}
		return o.createDefaultPod(ctx, ss, pod)
	}
	if schedule := plan.Schedule; schedule != nil {
		plan.Schedule = func(pods []*corev1.Pod) ([]node.PodPlan, error) {
			plans, err := schedule(pods)
			if err != nil {
				return plans, err
			}
			return plans, o.createScheduled(ctx, ss, plans)
		}
	}
	onMounted(ctx, plan, o.node, ss.trace)
}

// announcements say what the control plane is, what the input became
// and who the driver is.
func (o *ApiserverOptions) announcements() []string {
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
func onMounted(ctx context.Context, plan *node.Plan, ns *cluster.NodeSide, trace *csiclient.Trace) {
	onPod := plan.OnPod
	plan.OnPod = func(e node.PodEvent) {
		if onPod != nil {
			onPod(e)
		}
		if e.Step == "mounted" {
			if err := ns.PodRunning(teardownContext(ctx), e.Pod); err != nil {
				trace.Warn(context.Background(), fmt.Sprintf("API server: status of Pod %s/%s: %v", e.Pod.Namespace, e.Pod.Name, err))
			}
		}
	}
}

// createDefaultPod creates the default pod (made by the kubelet side when
// the input has none) through the API and takes the server's version.
func (o *ApiserverOptions) createDefaultPod(ctx context.Context, ss *session, pod *corev1.Pod) error {
	d, err := document(ss.opts.cluster, pod)
	if err != nil {
		return err
	}
	d.Source = "the default pod"
	docs, err := defaultPodClaims(ss.opts.cluster, pod)
	if err != nil {
		return err
	}
	applied, err := o.cp.Apply(ctx, append(docs, d), cluster.ApplyOptions{NodeName: ss.opts.NodeName})
	if err != nil {
		return apiserverError(err)
	}
	if err := readBack(ss.opts.cluster, applied.Objects); err != nil {
		return err
	}
	if p, ok := ss.opts.cluster.Pod(pod.Namespace, pod.Name); ok {
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
func (o *ApiserverOptions) createScheduled(ctx context.Context, ss *session, plans []node.PodPlan) error {
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
		d, err := document(ss.opts.cluster, pp.Pod)
		if err != nil {
			return err
		}
		d.Source = "a copy of an input pod"
		applied, err := o.cp.Apply(ctx, []cluster.Document{d}, cluster.ApplyOptions{NodeName: ss.opts.NodeName})
		if err != nil {
			return apiserverError(err)
		}
		if err := applied.Objects[0].Into(pp.Pod); err != nil {
			return err
		}
	}
	return nil
}

// finish stops the control plane (if the teardown did not), removes the
// simulator's dir it lived in when nothing else is there, and the root dir
// when the run made it and left nothing.
func (o *ApiserverOptions) finish(ss *session, out *node.Outcome) {
	if o.cp == nil {
		return
	}
	o.stop()
	if out == nil || out.Leftovers.NothingOnDisk() {
		_ = os.Remove(filepath.Join(ss.opts.RootDir, ".csi-kubelet-sim"))
		removeDirs(ss.rootDirs)
	}
}

// summary lists what the driver asked the API server, and what it
// created or changed.
func (o *ApiserverOptions) summary(ss *session) {
	if o.tail == nil {
		return
	}
	reqs := o.tail.Requests()
	var changed []string
	for _, r := range reqs {
		if r.Changes() {
			changed = append(changed, r.Verb+" "+r.Object())
		}
	}
	ss.obs.APIServer(APIServerRequests{DriverUser: o.identity.User, DriverIdentity: o.identity.Why, Requests: reqs, Changed: changed})
}

// driverConn is the driver's connection with the audit log read after
// every call, before the kubelet records it: the driver's API requests
// made while it handled a call are printed before the call's line.
type driverConn struct {
	grpc.ClientConnInterface
	o *ApiserverOptions
}

func (c driverConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	err := c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
	if c.o.tail != nil {
		c.o.tail.Poll()
	}
	return err
}

// conn wraps the driver's connection when the mode is on.
func (o *ApiserverOptions) conn(c grpc.ClientConnInterface) grpc.ClientConnInterface {
	if !o.Enabled {
		return c
	}
	return driverConn{ClientConnInterface: c, o: o}
}

// reportHeader adds the driver's identity and API requests to the
// --report page's header.
func (o *ApiserverOptions) reportHeader(h loadreport.Header) loadreport.Header {
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
// start (the API server's, put into the cluster by apiserverOptions.start).
func registeredNodeUID(c *manifests.Cluster, name string) types.UID {
	if n, ok := c.Node(name); ok {
		return n.UID
	}
	return ""
}
