package realkubelet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeIDAnnotation is where the kubelet records each driver's node ID.
const nodeIDAnnotation = "csi.volume.kubernetes.io/nodeid"

// simReport is what `csi-kubelet-sim run -o json` reports besides the
// calls: its result, the registration (the CSINode entry and Node
// annotation it would write) and its warnings (a kubelet's Warning events).
type simReport struct {
	Result       string
	Registration struct {
		CSINodeDriver    storagev1.CSINodeDriver `json:"csinode_driver"`
		NodeLabels       map[string]string       `json:"node_labels"`
		NodeIDAnnotation string                  `json:"node_id_annotation"`
	}
	Warnings []string
}

func parseSimReport(stdout []byte) (simReport, error) {
	var r simReport
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var rec struct {
			Kind         string          `json:"kind"`
			Level        string          `json:"level"`
			Text         string          `json:"text"`
			Result       string          `json:"result"`
			Registration json.RawMessage `json:"registration"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		switch {
		case rec.Kind == "step" && rec.Level == "warning":
			r.Warnings = append(r.Warnings, rec.Text)
		case rec.Kind == "summary":
			r.Result = rec.Result
			if len(rec.Registration) > 0 {
				if err := json.Unmarshal(rec.Registration, &r.Registration); err != nil {
					return r, fmt.Errorf("the summary's registration: %w", err)
				}
			}
		}
	}
	if r.Result == "" {
		return r, fmt.Errorf("no summary in the simulator's output")
	}
	return r, nil
}

// withoutTeardown is the report without the teardown that got stuck at
// prefix: its warning dropped, and the run OK when that was its only
// failure (the pod had started).
func (r simReport) withoutTeardown(prefix string) simReport {
	var kept []string
	for _, w := range r.Warnings {
		if !strings.Contains(w, prefix) {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 && len(r.Warnings) > 0 {
		r.Result = "OK"
	}
	r.Warnings = kept
	return r
}

// kubeletWrote is what the whole kubelet wrote into the API for a case.
type kubeletWrote struct {
	csiNode    *storagev1.CSINodeDriver
	annotation string
	labels     map[string]string
	started    bool     // the pod's PodReadyToStartContainers condition came True
	warnings   []string // the pod's Warning events about volumes
}

// podStarted waits (up to 10 s) for the kubelet to report the pod's
// PodReadyToStartContainers condition True (its volumes are mounted and its
// sandbox made: the pod started, whether or not its containers run; with
// the fake runtime an init container never ends), and tells whether it did.
func (s *stack) podStarted(ctx context.Context, pod *corev1.Pod) bool {
	_, err := waitFor(ctx, nil, "pod ready to start containers", 10*time.Second, func(ctx context.Context) error {
		p, err := s.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errNotYet
	})
	return err == nil
}

// written reads what the kubelet wrote: its CSINode's entry of the driver,
// the Node's annotation and labels, and the pod's Warning events about
// volumes (reason: message).
func (s *stack) written(ctx context.Context, t *testing.T, pod *corev1.Pod, started bool) kubeletWrote {
	w := kubeletWrote{started: started}
	n, err := s.client.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("CSINode: %v", err)
	}
	for i := range n.Spec.Drivers {
		if n.Spec.Drivers[i].Name == driverName {
			w.csiNode = &n.Spec.Drivers[i]
		}
	}
	node, err := s.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Node: %v", err)
	}
	w.annotation, w.labels = node.Annotations[nodeIDAnnotation], node.Labels
	evs, err := s.client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeWarning && volumeEvent(e.Reason) {
			w.warnings = append(w.warnings, e.Reason+": "+e.Message)
		}
	}
	sort.Strings(w.warnings)
	return w
}

// volumeEvent tells a volume manager's event reason (FailedMount,
// FailedMapVolume, FailedAttachVolume, VolumeResizeFailed, ...).
func volumeEvent(reason string) bool {
	for _, w := range []string{"Mount", "Volume", "Map", "Attach"} {
		if strings.Contains(reason, w) {
			return true
		}
	}
	return false
}

// compareWritten: the CSINode entry and the Node's annotation the kubelet
// wrote at registration are those the simulator reports; the topology
// labels it reports are on the Node; the pod started on the kubelet when the
// simulator reports OK; neither has a warning about volumes, or both do.
func compareWritten(w kubeletWrote, r simReport) []string {
	var diffs []string
	sim := r.Registration.CSINodeDriver
	switch {
	case w.csiNode == nil:
		diffs = append(diffs, "the kubelet's CSINode has no entry for the driver")
	case w.csiNode.NodeID != sim.NodeID || len(w.csiNode.TopologyKeys)+len(sim.TopologyKeys) > 0 && !reflect.DeepEqual(w.csiNode.TopologyKeys, sim.TopologyKeys) ||
		!reflect.DeepEqual(w.csiNode.Allocatable, sim.Allocatable):
		diffs = append(diffs, fmt.Sprintf("CSINode driver entry: kubelet %+v, simulator %+v", *w.csiNode, sim))
	}
	var kAnn, sAnn map[string]string
	_ = json.Unmarshal([]byte(w.annotation), &kAnn)
	_ = json.Unmarshal([]byte(r.Registration.NodeIDAnnotation), &sAnn)
	if kAnn[driverName] == "" || kAnn[driverName] != sAnn[driverName] {
		diffs = append(diffs, fmt.Sprintf("Node annotation %s: kubelet %q, simulator %q", nodeIDAnnotation, w.annotation, r.Registration.NodeIDAnnotation))
	}
	for k, v := range r.Registration.NodeLabels {
		if w.labels[k] != v {
			diffs = append(diffs, fmt.Sprintf("Node label %s: kubelet %q, simulator %q", k, w.labels[k], v))
		}
	}
	if w.started != (r.Result == "OK") {
		diffs = append(diffs, fmt.Sprintf("the pod: started %t on the kubelet (PodReadyToStartContainers), %s on the simulator", w.started, r.Result))
	}
	if (len(w.warnings) == 0) != (len(r.Warnings) == 0) {
		diffs = append(diffs, fmt.Sprintf("warnings: kubelet events %q, simulator %q", w.warnings, r.Warnings))
	}
	return diffs
}
