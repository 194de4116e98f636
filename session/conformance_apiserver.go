package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// conformanceAPI is `conformance --apiserver`: the control plane of `run
// --apiserver`, started once for the whole run, around every scenario.
// The scenarios run one at a time, so the driver's requests in the audit
// log belong to the scenario running.
type conformanceAPI struct {
	o        *ApiserverOptions
	nodeName string
	// nodeUID, liveNode: the CSINode's owner as the release names it
	// (cluster.NodeSide).
	nodeUID  types.UID
	liveNode bool

	mu    sync.Mutex
	trace *csiclient.Trace  // the running scenario's
	reqs  []cluster.Request // the driver's requests during it
}

var _ conformance.APIServer = (*conformanceAPI)(nil)

// undoStack is what a command undoes at its end, last first.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u *undoStack) Run() {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	*u = nil
}

// takeRootDir takes (and locks) the root dir; undo releases it and removes
// what it made.
func takeRootDir(co *CommonOptions, created *[]string, undo *undoStack) error {
	c, err := co.prepareRootDir()
	if err != nil {
		return err
	}
	*created = c
	undo.push(func() {
		co.rootLock.Release()
		removeDirs(c)
	})
	return nil
}

// startWithAPIServer takes the root dir and starts the control plane in
// it, both before the probe: the driver starts once its kubeconfig
// exists. undo stops and removes the control plane, then the root dir.
func (o *ConformanceOptions) startWithAPIServer(ctx context.Context, co *CommonOptions, created *[]string, undo *undoStack) (*conformanceAPI, error) {
	if err := takeRootDir(co, created, undo); err != nil {
		return nil, err
	}
	api, err := o.startConformanceAPI(ctx, co)
	if err != nil {
		return nil, err
	}
	undo.push(func() { o.stopConformanceAPI(co.RootDir) })
	return api, nil
}

// startConformanceAPI starts the control plane under the locked root dir
// with the input (the CSIDriver and what else was given, but not its pods
// and volumes), writes the driver's kubeconfig and waits for its socket:
// the driver starts once the kubeconfig exists.
func (o *ConformanceOptions) startConformanceAPI(ctx context.Context, co *CommonOptions) (*conformanceAPI, error) {
	if o.cluster == nil {
		o.cluster = manifests.New()
	}
	co.NodeName, co.cluster = o.NodeName, o.cluster
	o.Apiserver.leaveOut = map[string]bool{"Pod": true, "PersistentVolume": true, "PersistentVolumeClaim": true}
	if err := o.Apiserver.start(ctx, co, o.endpoint); err != nil {
		return nil, err
	}
	// The scenarios use the API server's CSIDriver (its defaults, its UID).
	o.csiDrivers = o.cluster.CSIDrivers()
	a := &conformanceAPI{o: &o.Apiserver, nodeName: o.NodeName, nodeUID: registeredNodeUID(o.cluster, o.NodeName), liveNode: o.Release.CSINodeOwnerFromLiveNode()}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o.Apiserver.stopTail = cancel
	o.Apiserver.tail = o.Apiserver.cp.TailAudit(tctx, o.Apiserver.identity.User, a.driverRequest)
	return a, nil
}

// stopConformanceAPI stops the control plane and removes it.
func (o *ConformanceOptions) stopConformanceAPI(root string) {
	o.Apiserver.stop()
	_ = os.Remove(filepath.Join(root, ".csi-kubelet-sim"))
}

// announcements say what the control plane is, as run's trace says it.
func (a *conformanceAPI) announcements() []string {
	return append(a.o.announcements(), "API server: every scenario's pod, volume and claim are created through the API and deleted after it; the scenarios run one at a time")
}

func (a *conformanceAPI) Tokens() tokens.TokenGetter { return a.o.cp.KubeletTokens() }

// driverRequest puts a request of the driver from the audit log in the
// running scenario's trace.
func (a *conformanceAPI) driverRequest(r cluster.Request) {
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
// the controllers' API writes into the plan, as run's attach does.
func (a *conformanceAPI) Plan(ctx context.Context, c *manifests.Cluster, plan *node.Plan, trace *csiclient.Trace, note func(string, ...any)) error {
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
	onMounted(ctx, plan, ns, trace)
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
func (a *conformanceAPI) begin(trace *csiclient.Trace) {
	a.o.tail.Poll() // what came before belongs to no scenario
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trace, a.reqs = trace, nil
}

// end notes the driver's requests during the scenario (for the text
// output with -v, JSON and JUnit), and what it created or changed.
func (a *conformanceAPI) end(note func(string, ...any)) {
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

// hook adds to cfg the API server (announced after the header) or the
// admission of the input's webhooks, and the live trace of -v.
func (o *ConformanceOptions) hook(ctx context.Context, cfg *conformance.Config, api *conformanceAPI, p ConformanceObserver, undo *undoStack) error {
	s := o.Streams
	if api != nil {
		for _, line := range api.announcements() {
			p.Announce(line)
		}
		// The API server runs the input's webhooks on the pods itself.
		cfg.APIServer = api
	} else {
		admit, err := o.startAdmission(ctx, s, undo)
		if err != nil {
			return err
		}
		cfg.Admit = admit
	}
	// The live trace (-v) is the observer's; without one the scenarios
	// may run side by side.
	cfg.Sink = p.LiveTrace()
	return nil
}

// startAdmission starts admitFunc's admission; undo closes it.
func (o *ConformanceOptions) startAdmission(ctx context.Context, s Streams, undo *undoStack) (func(*corev1.Pod) (*corev1.Pod, error), error) {
	admit, closeAdmit, err := o.admitFunc(ctx, s)
	if err != nil {
		return nil, err
	}
	undo.push(closeAdmit)
	return admit, nil
}
