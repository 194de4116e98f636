package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// NodeSide is what the kubelet and the controllers write to the API
// server around the simulated kubelet's own work. It is the plan's
// controller (node.Controller): Prepare runs once the driver registered,
// Finish after the pods' teardown. Inner is the sidecars' controller, if
// any, run first on the way in and first on the way out.
type NodeSide struct {
	CP       *ControlPlane
	Inner    node.Controller
	NodeName string
	// Note tells the trace what was written.
	Note func(string)
	// Created lists the driver's requests, for the garbage collector
	// (from the audit log).
	Created func() []Request
	// Done runs at the end of Finish, once nothing needs the API server
	// any more: the control plane stops there, before the kubelet gives
	// the root dir up.
	Done func()
	// Remove are objects made for these pods alone (a conformance
	// scenario's volume and claim), deleted after them.
	Remove []Object
	// StartNodeUID is the Node's UID as the kubelet learnt it on start:
	// up to 1.37 the CSINode's owner ("" writes none).
	StartNodeUID types.UID
	// OwnerFromLiveNode (1.38, node.Version.CSINodeOwnerFromLiveNode):
	// the kubelet reads its Node right before it creates the CSINode and
	// makes the live Node, by its current UID, the owner.
	OwnerFromLiveNode bool

	pods map[types.UID]*corev1.Pod
}

var _ node.Controller = (*NodeSide)(nil)

func (n *NodeSide) note(format string, args ...any) {
	if n.Note != nil {
		n.Note(fmt.Sprintf(format, args...))
	}
}

// Prepare writes what the kubelet writes when a driver registers: the
// Node's topology labels and node-ID annotation, and the CSINode entry.
func (n *NodeSide) Prepare(ctx context.Context, reg *node.Registration, pods []*corev1.Pod) error {
	if n.Inner != nil {
		if err := n.Inner.Prepare(ctx, reg, pods); err != nil {
			return err
		}
	}
	n.pods = map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		n.pods[p.UID] = p
	}
	if reg == nil {
		return nil
	}
	if err := n.labelNode(ctx, reg); err != nil {
		return err
	}
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n.NodeName}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{reg.CSINodeDriver}}}
	csiNode.APIVersion, csiNode.Kind = "storage.k8s.io/v1", "CSINode"
	owner, err := n.csiNodeOwner(ctx)
	if err != nil {
		return err
	}
	if owner != "" {
		csiNode.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.NodeName, UID: owner}}
	}
	if err := n.CP.kubelet.do(ctx, http.MethodPost, "/apis/storage.k8s.io/v1/csinodes", csiNode, nil); err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("API server: CSINode %s: %w", n.NodeName, err)
	}
	n.note("wrote CSINode %s (driver %s, node ID %s, topology keys %v)", n.NodeName, reg.DriverName, reg.NodeID, reg.CSINodeDriver.TopologyKeys)
	return nil
}

// csiNodeOwner is the UID the CSINode's owner reference names: from 1.38
// the live Node's, read just before (nodeinfomanager.go CreateCSINode),
// up to 1.37 the one the kubelet learnt on start.
func (n *NodeSide) csiNodeOwner(ctx context.Context) (types.UID, error) {
	if !n.OwnerFromLiveNode {
		return n.StartNodeUID, nil
	}
	live := &corev1.Node{}
	if err := n.CP.kubelet.do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(n.NodeName), nil, live); err != nil {
		return "", fmt.Errorf("API server: Node %s (read before the CSINode is created): %w", n.NodeName, err)
	}
	n.note("read Node %s (UID %s): the CSINode's owner", n.NodeName, live.UID)
	return live.UID, nil
}

func (n *NodeSide) labelNode(ctx context.Context, reg *node.Registration) error {
	meta := map[string]any{}
	if len(reg.NodeLabels) > 0 {
		meta["labels"] = reg.NodeLabels
	}
	if reg.NodeIDAnnotation != "" {
		meta["annotations"] = map[string]string{"csi.volume.kubernetes.io/nodeid": reg.NodeIDAnnotation}
	}
	if len(meta) == 0 {
		return nil
	}
	patch := map[string]any{"metadata": meta}
	if err := n.CP.kubelet.do(ctx, http.MethodPatch, "/api/v1/nodes/"+url.PathEscape(n.NodeName), patch, nil, "application/strategic-merge-patch+json"); err != nil {
		return fmt.Errorf("API server: Node %s labels: %w", n.NodeName, err)
	}
	return nil
}

// PodRunning writes the pod's status as the kubelet does once its volumes
// are mounted and its containers started.
func (n *NodeSide) PodRunning(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.Now()
	st := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, Conditions: []corev1.PodCondition{
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}}
	b, _ := json.Marshal(map[string]any{"status": st})
	var patch map[string]any
	_ = json.Unmarshal(b, &patch)
	path := "/api/v1/namespaces/" + url.PathEscape(pod.Namespace) + "/pods/" + url.PathEscape(pod.Name) + "/status"
	return n.CP.kubelet.do(ctx, http.MethodPatch, path, patch, nil, "application/merge-patch+json")
}

// Finish deletes the pods, as the user and the kubelet do at the end, and
// what the driver made for them, as the garbage collector does (objects
// whose ownerReferences name a deleted pod).
func (n *NodeSide) Finish(ctx context.Context, inUse func(driver, handle string) bool) []error {
	var errs []error
	if n.Inner != nil {
		errs = n.Inner.Finish(ctx, inUse)
	}
	zero := int64(0)
	for _, p := range n.pods {
		path := "/api/v1/namespaces/" + url.PathEscape(p.Namespace) + "/pods/" + url.PathEscape(p.Name)
		err := n.CP.admin.do(ctx, http.MethodDelete, path, &metav1.DeleteOptions{GracePeriodSeconds: &zero}, nil)
		if err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("API server: delete Pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		n.note("deleted Pod %s/%s", p.Namespace, p.Name)
	}
	if n.Created != nil {
		errs = append(errs, n.collectGarbage(ctx)...)
	}
	if len(n.Remove) > 0 {
		rerrs := n.CP.Remove(ctx, n.Remove)
		for _, o := range n.Remove {
			if len(rerrs) == 0 {
				n.note("deleted %s", o)
			}
		}
		errs = append(errs, rerrs...)
	}
	if n.Done != nil {
		n.Done()
	}
	return errs
}

func (n *NodeSide) collectGarbage(ctx context.Context) []error {
	var errs []error
	for _, r := range n.Created() {
		if r.Verb != "create" || r.Code != http.StatusCreated || r.Subresource != "" || r.Name == "" {
			continue
		}
		path := r.Path()
		var obj metav1.PartialObjectMetadata
		if err := n.CP.admin.do(ctx, http.MethodGet, path, nil, &obj); err != nil {
			continue // gone already
		}
		for _, o := range obj.OwnerReferences {
			p, ok := n.pods[o.UID]
			if !ok {
				continue
			}
			if err := n.CP.admin.do(ctx, http.MethodDelete, path, nil, nil); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("API server: garbage collection of %s: %w", r.Object(), err))
			} else {
				n.note("garbage collector: deleted %s (owner Pod %s/%s)", r.Object(), p.Namespace, p.Name)
			}
			break
		}
	}
	return errs
}
