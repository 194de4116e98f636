package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

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
	// Created lists the objects the driver created, for the garbage
	// collector (from the audit log).
	Created func() []Request
	// Done runs at the end of Finish, once nothing needs the API server
	// any more: the control plane stops there, before the kubelet gives
	// the root dir up.
	Done func()

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
	c, err := n.CP.KubeletClient()
	if err != nil {
		return err
	}
	if err := n.labelNode(ctx, c, reg); err != nil {
		return err
	}
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n.NodeName}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{reg.CSINodeDriver}}}
	if _, err := c.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("API server: CSINode %s: %w", n.NodeName, err)
	}
	n.note("wrote CSINode %s (driver %s, node ID %s, topology keys %v)", n.NodeName, reg.DriverName, reg.NodeID, reg.CSINodeDriver.TopologyKeys)
	return nil
}

func (n *NodeSide) labelNode(ctx context.Context, c kubernetes.Interface, reg *node.Registration) error {
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
	patch, _ := json.Marshal(map[string]any{"metadata": meta})
	if _, err := c.CoreV1().Nodes().Patch(ctx, n.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("API server: Node %s labels: %w", n.NodeName, err)
	}
	return nil
}

// PodRunning writes the pod's status as the kubelet does once its volumes
// are mounted and its containers started.
func (n *NodeSide) PodRunning(ctx context.Context, pod *corev1.Pod) error {
	c, err := n.CP.KubeletClient()
	if err != nil {
		return err
	}
	now := metav1.Now()
	p := pod.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	_, err = c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// Finish deletes the pods, as the user and the kubelet do at the end, and
// what the driver made for them, as the garbage collector does (objects
// whose ownerReferences name a deleted pod).
func (n *NodeSide) Finish(ctx context.Context, inUse func(driver, handle string) bool) []error {
	var errs []error
	if n.Inner != nil {
		errs = n.Inner.Finish(ctx, inUse)
	}
	admin, err := kubernetes.NewForConfig(n.CP.Admin)
	if err != nil {
		return append(errs, err)
	}
	zero := int64(0)
	for _, p := range n.pods {
		err := admin.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("API server: delete Pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		n.note("deleted Pod %s/%s", p.Namespace, p.Name)
	}
	if n.Created != nil {
		errs = append(errs, n.collectGarbage(ctx)...)
	}
	if n.Done != nil {
		n.Done()
	}
	return errs
}

func (n *NodeSide) collectGarbage(ctx context.Context) []error {
	dyn, err := dynamic.NewForConfig(n.CP.Admin)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, r := range n.Created() {
		if r.Verb != "create" || r.Code != 201 || r.Subresource != "" || r.Name == "" {
			continue
		}
		gvr := schema.GroupVersionResource{Group: r.APIGroup, Version: r.APIVersion, Resource: r.Resource}
		ri := dyn.Resource(gvr).Namespace(r.Namespace)
		obj, err := ri.Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			continue // gone already
		}
		for _, o := range obj.GetOwnerReferences() {
			if p, ok := n.pods[o.UID]; ok {
				if err := ri.Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("API server: garbage collection of %s: %w", r.Object(), err))
				} else {
					n.note("garbage collector: deleted %s (owner Pod %s/%s)", r.Object(), p.Namespace, p.Name)
				}
				break
			}
		}
	}
	return errs
}
