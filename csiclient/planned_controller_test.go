package csiclient

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestPlannedController: the planned controller reports its capabilities
// and answers CreateVolume with the requested name and size.
func TestPlannedController(t *testing.T) {
	caps, err := ParseControllerCapabilities(DefaultPlannedControllerCapabilities)
	if err != nil || len(caps) != 2 {
		t.Fatalf("defaults: %v %v", caps, err)
	}
	if _, err := ParseControllerCapabilities([]string{"NOPE"}); err == nil {
		t.Error("an unknown capability was accepted")
	}
	p := &Planned{ControllerCapabilities: caps, Topology: map[string]string{"zone": "a"}}
	resp, err := csi.NewControllerClient(p).CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: "pvc-1", CapacityRange: &csi.CapacityRange{RequiredBytes: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if v := resp.GetVolume(); v.GetVolumeId() != "pvc-1" || v.GetCapacityBytes() != 5 || v.GetAccessibleTopology()[0].GetSegments()["zone"] != "a" {
		t.Errorf("CreateVolume answered %v", v)
	}
	cc, err := csi.NewControllerClient(p).ControllerGetCapabilities(context.Background(), &csi.ControllerGetCapabilitiesRequest{})
	if err != nil || len(cc.GetCapabilities()) != 2 {
		t.Errorf("ControllerGetCapabilities: %v %v", cc, err)
	}
	pc, err := csi.NewIdentityClient(p).GetPluginCapabilities(context.Background(), &csi.GetPluginCapabilitiesRequest{})
	if err != nil || len(pc.GetCapabilities()) != 2 {
		t.Errorf("GetPluginCapabilities: %v %v", pc, err)
	}
}
