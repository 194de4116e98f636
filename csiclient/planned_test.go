package csiclient

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func TestPlannedAnswers(t *testing.T) {
	p := &Planned{
		DriverName: "hostpath.csi.k8s.io", VendorVersion: "v1.2.3", NodeID: "node-1-id", MaxVolumesPerNode: 8,
		Topology:     map[string]string{"zone": "z1"},
		Capabilities: []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP},
	}
	ctx := context.Background()
	info, err := csi.NewIdentityClient(p).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || !proto.Equal(info, &csi.GetPluginInfoResponse{Name: "hostpath.csi.k8s.io", VendorVersion: "v1.2.3"}) {
		t.Errorf("GetPluginInfo = %v, %v", info, err)
	}
	n := csi.NewNodeClient(p)
	ni, err := n.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	want := &csi.NodeGetInfoResponse{NodeId: "node-1-id", MaxVolumesPerNode: 8, AccessibleTopology: &csi.Topology{Segments: map[string]string{"zone": "z1"}}}
	if err != nil || !proto.Equal(ni, want) {
		t.Errorf("NodeGetInfo = %v, %v", ni, err)
	}
	caps, err := n.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []csi.NodeServiceCapability_RPC_Type
	for _, c := range caps.GetCapabilities() {
		got = append(got, c.GetRpc().GetType())
	}
	if !slices.Equal(got, p.Capabilities) {
		t.Errorf("capabilities = %v, want %v", got, p.Capabilities)
	}
	if _, err := n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{}); err != nil {
		t.Errorf("NodeStageVolume: %v", err)
	}
	if _, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{}); err != nil {
		t.Errorf("NodePublishVolume: %v", err)
	}
	if _, err := n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{}); err != nil {
		t.Errorf("NodeUnpublishVolume: %v", err)
	}
	if _, err := n.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{}); err != nil {
		t.Errorf("NodeUnstageVolume: %v", err)
	}
	er, err := n.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{CapacityRange: &csi.CapacityRange{RequiredBytes: 5 << 30}})
	if err != nil || er.GetCapacityBytes() != 5<<30 {
		t.Errorf("NodeExpandVolume = %v, %v; want the required bytes back", er, err)
	}
	_, err = csi.NewControllerClient(p).ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{})
	if status.Code(err) != codes.Unimplemented || status.Convert(err).Message() != "plan: /csi.v1.Controller/ControllerPublishVolume is not planned" {
		t.Errorf("ControllerPublishVolume: %v", err)
	}
}

func TestPlannedNoTopology(t *testing.T) {
	ni, err := csi.NewNodeClient(&Planned{NodeID: "n"}).NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	if err != nil || ni.AccessibleTopology != nil {
		t.Errorf("NodeGetInfo = %v, %v; want no accessible_topology", ni, err)
	}
	caps, _ := csi.NewNodeClient(&Planned{}).NodeGetCapabilities(context.Background(), &csi.NodeGetCapabilitiesRequest{})
	if len(caps.GetCapabilities()) != 0 {
		t.Errorf("capabilities = %v, want none", caps)
	}
}

func TestParseCapabilities(t *testing.T) {
	got, err := ParseCapabilities([]string{"STAGE_UNSTAGE_VOLUME", "", "SINGLE_NODE_MULTI_WRITER", "VOLUME_MOUNT_GROUP"})
	want := []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER, csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP,
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseCapabilities = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"UNKNOWN", "STAGE", "stage_unstage_volume"} {
		_, err := ParseCapabilities([]string{bad})
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if want := `unknown node capability "` + bad + `" (known: STAGE_UNSTAGE_VOLUME, GET_VOLUME_STATS, EXPAND_VOLUME`; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error = %q, want prefix %q", err, want)
		}
	}
}

func TestParseCapabilitiesPrefixAndKnownList(t *testing.T) {
	got, err := ParseCapabilities([]string{"NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP"})
	if err != nil || len(got) != 1 || got[0].String() != "VOLUME_MOUNT_GROUP" {
		t.Fatalf("ParseCapabilities = %v, %v", got, err)
	}
	_, err = ParseCapabilities([]string{"NOPE"})
	for _, name := range []string{"STAGE_UNSTAGE_VOLUME", "SINGLE_NODE_MULTI_WRITER", "VOLUME_MOUNT_GROUP"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error %v does not list %s", err, name)
		}
	}
}
