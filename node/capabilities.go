package node

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// nodeSupports is the kubelet's nodeSupportsCapability: a NodeGetCapabilities
// call of its own, on a new connection, for every capability it tests. The
// kubelet never caches the answer, and drivers see every one of these calls.
func (k *Kubelet) nodeSupports(ctx context.Context, c csi.NodeServiceCapability_RPC_Type) (bool, error) {
	resp, err := k.nodeClient().NodeGetCapabilities(csiclient.WithAsking(ctx, c.String()), &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		if k.cfg.Version.CapabilityErrorsUncertain() && !isFinalError(err) {
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
