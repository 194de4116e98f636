package controlplane

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// Scenarios is `conformance --apiserver`: the control plane of `run
// --apiserver`, started once for the whole run, around every scenario.
// The scenarios run one at a time, so the driver's requests in the audit
// log belong to the scenario running.
type Scenarios struct {
	o        *Options
	nodeName string
	// nodeUID, liveNode: the CSINode's owner as the release names it
	// (cluster.NodeSide).
	nodeUID  types.UID
	liveNode bool

	mu    sync.Mutex
	trace *csiclient.Trace  // the running scenario's
	reqs  []cluster.Request // the driver's requests during it
}

var _ conformance.APIServer = (*Scenarios)(nil)

// StartScenarios starts the control plane under the locked root dir with
// the input (the CSIDriver and what else was given, but not its pods and
// volumes: each scenario creates its own), writes the driver's kubeconfig
// and waits for its socket: the driver starts once the kubeconfig exists.
// Close stops it.
func (o *Options) StartScenarios(ctx context.Context, cfg Config) (*Scenarios, error) {
	o.leaveOut = map[string]bool{"Pod": true, "PersistentVolume": true, "PersistentVolumeClaim": true}
	if err := o.Start(ctx, cfg); err != nil {
		return nil, err
	}
	a := &Scenarios{o: o, nodeName: cfg.NodeName, nodeUID: registeredNodeUID(cfg.Cluster, cfg.NodeName), liveNode: cfg.Release.CSINodeOwnerFromLiveNode()}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o.stopTail = cancel
	o.tail = o.cp.TailAudit(tctx, o.identity.User, a.driverRequest)
	return a, nil
}

// Close stops the control plane and removes it, and the simulator's dir
// it lived in when nothing else is there.
func (o *Options) Close() {
	o.Stop()
	o.removeDir()
}

// Announcements say what the control plane is, as run's trace says it.
func (a *Scenarios) Announcements() []string {
	return append(a.o.Announcements(), "API server: every scenario's pod, volume and claim are created through the API and deleted after it; the scenarios run one at a time")
}

func (a *Scenarios) Tokens() tokens.TokenGetter { return a.o.cp.KubeletTokens() }

// driverRequest puts a request of the driver from the audit log in the
// running scenario's trace.
func (a *Scenarios) driverRequest(r cluster.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.trace == nil {
		return
	}
	a.reqs = append(a.reqs, r)
	ctx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "driver", Operation: "API request"})
	a.trace.Note(ctx, false, r.String()+" at "+r.Time.Format("15:04:05.000"))
}

// Plan creates the plan's pods and their volumes and claims through the
// API (after removing what an earlier scenario may have left under the
// same names), takes the server's versions, and hooks the kubelet's and
// the controllers' API writes into the plan, as Attach does for a run.
func (a *Scenarios) Plan(ctx context.Context, c *manifests.Cluster, plan *node.Plan, trace *csiclient.Trace, note func(string, ...any)) error {
	docs, volumes, err := scenarioDocuments(c, plan.Pods)
	if err != nil {
		return err
	}
	if errs := a.o.cp.Remove(ctx, volumes); len(errs) > 0 {
		return errs[0]
	}
	applied, err := a.o.cp.Apply(ctx, docs, cluster.ApplyOptions{NodeName: a.nodeName})
	if err != nil {
		return err
	}
	if err := readBack(c, applied.Objects); err != nil {
		return err
	}
	for _, pp := range plan.Pods {
		if p, ok := c.Pod(pp.Pod.Namespace, pp.Pod.Name); ok {
			*pp.Pod = *p
		}
	}
	var made []string
	for _, obj := range applied.Objects {
		made = append(made, fmt.Sprintf("%s (UID %s)", obj, obj.UID()))
	}
	note("API server: created through the API: %s", strings.Join(made, ", "))
	var remove []cluster.Object
	for _, obj := range applied.Objects {
		if k := obj.Kind(); obj.APIVersion() == "v1" && (k == "PersistentVolume" || k == "PersistentVolumeClaim") {
			remove = append(remove, obj)
		}
	}
	a.begin(trace)
	kubeletCtx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "kubelet", Operation: "API server"})
	ns := &cluster.NodeSide{CP: a.o.cp, Inner: plan.Controller, NodeName: a.nodeName, Remove: remove,
		StartNodeUID: a.nodeUID, OwnerFromLiveNode: a.liveNode,
		Note: func(s string) {
			trace.Note(kubeletCtx, false, s)
			note("API server: %s", s)
		},
		Created: func() []cluster.Request { a.o.tail.Poll(); return a.o.tail.Requests() },
		Done:    func() { a.end(note) },
	}
	plan.Controller = ns
	a.o.onMounted(ctx, plan, ns, trace)
	return nil
}

// scenarioDocuments are the pods and the claims and volumes they mount,
// as new objects (an earlier Run of the scenario left the server's fields
// on them); volumes are the claims and volumes alone.
func scenarioDocuments(c *manifests.Cluster, pods []node.PodPlan) (docs []cluster.Document, volumes []cluster.Object, err error) {
	var objs []any
	for _, pp := range pods {
		for _, v := range pp.Pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			pvc, ok := c.PersistentVolumeClaim(pp.Pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if !ok {
				continue
			}
			if pv, ok := c.PersistentVolume(pvc.Spec.VolumeName); ok {
				objs = append(objs, pv)
			}
			objs = append(objs, pvc)
		}
	}
	nVolumes := len(objs)
	for _, pp := range pods {
		objs = append(objs, pp.Pod)
	}
	for i, obj := range objs {
		d, err := document(c, obj)
		if err != nil {
			return nil, nil, err
		}
		d.Source = "the scenario's objects"
		fresh(d.Obj)
		docs = append(docs, d)
		if i < nVolumes {
			volumes = append(volumes, d.Obj)
		}
	}
	return docs, volumes, nil
}

// fresh drops what the API server sets on an object it stores.
func fresh(o cluster.Object) {
	meta, _ := o["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "finalizers"} {
		delete(meta, k)
	}
}

// begin makes the scenario's trace the one the driver's requests go to.
func (a *Scenarios) begin(trace *csiclient.Trace) {
	a.o.tail.Poll() // what came before belongs to no scenario
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trace, a.reqs = trace, nil
}

// end notes the driver's requests during the scenario (for the text
// output with -v, JSON and JUnit), and what it created or changed.
func (a *Scenarios) end(note func(string, ...any)) {
	a.o.tail.Poll()
	a.mu.Lock()
	reqs := a.reqs
	a.trace, a.reqs = nil, nil
	a.mu.Unlock()
	var changed []string
	for _, r := range reqs {
		note("API server: driver request %s at %s", r.String(), r.Time.Format("15:04:05.000"))
		if r.Changes() {
			changed = append(changed, r.Verb+" "+r.Object())
		}
	}
	summary := fmt.Sprintf("API server: the driver (%s) made %d requests", a.o.identity.User, len(reqs))
	if len(changed) > 0 {
		summary += "; it created or changed: " + strings.Join(changed, ", ")
	}
	note("%s", summary)
}
