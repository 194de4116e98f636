package csi

// capabilities.go follows pkg/volume/csi/csi_client.go: NodeGetCapabilities
// and the capability queries.

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// NodeSupports is the kubelet's nodeSupportsCapability: a NodeGetCapabilities
// call of its own, on a new connection, for every capability it tests. The
// kubelet never caches the answer, and drivers see every one of these calls.
func (k *Plugin) NodeSupports(ctx context.Context, c csi.NodeServiceCapability_RPC_Type) (bool, error) {
	resp, err := k.NodeClient.NodeGetCapabilities(csiclient.WithAsking(ctx, capabilityName(c)), &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		if k.Release.CapabilityErrorsUncertain() && !IsFinalError(err) {
			return false, AsUncertain(err)
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
	if c == VolumeConditionCapability {
		return "VOLUME_CONDITION"
	}
	return c.String()
}

// VolumeConditionCapability is VOLUME_CONDITION (4), which CSI spec 1.13
// removed in favour of GET_VOLUME_HEALTH; kubelets up to 1.36 still ask it.
const VolumeConditionCapability = csi.NodeServiceCapability_RPC_Type(4)
