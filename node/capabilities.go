package node

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// nodeSupports is the kubelet's nodeSupportsCapability: a NodeGetCapabilities
// call of its own, on a new connection, for every capability it tests. The
// kubelet never caches the answer, and drivers see every one of these calls.
func (k *csiPlugin) nodeSupports(ctx context.Context, c csi.NodeServiceCapability_RPC_Type) (bool, error) {
	resp, err := k.nodeClient.NodeGetCapabilities(csiclient.WithAsking(ctx, capabilityName(c)), &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		if k.release.CapabilityErrorsUncertain() && !isFinalError(err) {
			return false, uncertain(err)
		}
		return false, err
	}
	for _, capability := range resp.GetCapabilities() {
		if capability.GetRpc().GetType() == c {
			return true, nil
		}
	}
	return false, nil
}

// capabilityName is the capability's name in the trace; VOLUME_CONDITION (4)
// is no longer in the CSI spec this is built with, but kubelets up to 1.36
// still ask for it.
func capabilityName(c csi.NodeServiceCapability_RPC_Type) string {
	if c == volumeConditionCapability {
		return "VOLUME_CONDITION"
	}
	return c.String()
}
