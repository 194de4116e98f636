package csi

// nodeuid.go: the Node object's UID a bound token names (pkg/kubelet/token).

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// NodeUID is the UID of the simulator's node, which the API server binds
// every pod-bound token to (kubernetes.io.node.uid, docs/kubelet.md §4.5):
// the Node object's when the input has one with a UID; otherwise one of
// its own, derived from the node's name as pods and ServiceAccounts
// without a UID get theirs (manifests.StableUID), so that the same input
// gives the same claims on every run. A real kubelet always has its Node,
// which the API server gave a UID when the kubelet registered it. The
// second result says where the UID comes from, for the trace.
func NodeUID(c *manifests.Cluster, nodeName string) (types.UID, string) {
	if n, ok := c.Node(nodeName); ok && n.UID != "" {
		return n.UID, "the Node object's"
	}
	return manifests.StableUID("Node", "", nodeName), "the simulator's own, derived from the node name (no Node object with a UID in the input)"
}
