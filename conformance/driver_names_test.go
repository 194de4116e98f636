package conformance

import (
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// Capabilities the spec module no longer names print by their old name,
// not as a number (issue 11: the header printed VOLUME_CONDITION as 4/11).
func TestCapabilityNames(t *testing.T) {
	d := &DriverInfo{
		Node:                   []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, 4, 42},
		ControllerCapabilities: []csi.ControllerServiceCapability_RPC_Type{11, csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME},
	}
	if got, want := d.NodeCapabilityNames(), []string{"STAGE_UNSTAGE_VOLUME", "UNKNOWN_42", "VOLUME_CONDITION"}; !slices.Equal(got, want) {
		t.Errorf("node %v, want %v", got, want)
	}
	if got, want := d.ControllerCapabilityNames(), []string{"CREATE_DELETE_VOLUME", "VOLUME_CONDITION"}; !slices.Equal(got, want) {
		t.Errorf("controller %v, want %v", got, want)
	}
}
