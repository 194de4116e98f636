package csiclient

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Planned answers calls from what the user said about the driver instead of
// a socket, for `plan`. Because `run` and `plan` share one kubelet code path
// that builds the requests, only the answers differ.
type Planned struct {
	DriverName        string
	VendorVersion     string
	NodeID            string
	MaxVolumesPerNode int64
	Topology          map[string]string
	Capabilities      []csi.NodeServiceCapability_RPC_Type
	// ControllerCapabilities are the controller's (none: no controller
	// service), for the simulated provisioner and attacher.
	ControllerCapabilities []csi.ControllerServiceCapability_RPC_Type
}

var _ grpc.ClientConnInterface = (*Planned)(nil)

// Invoke fills reply as a driver with the planned identity and capabilities
// would; every node operation succeeds.
func (p *Planned) Invoke(_ context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	var answer proto.Message
	switch path.Base(method) {
	case "GetPluginInfo":
		answer = &csi.GetPluginInfoResponse{Name: p.DriverName, VendorVersion: p.VendorVersion}
	case "NodeGetInfo":
		resp := &csi.NodeGetInfoResponse{NodeId: p.NodeID, MaxVolumesPerNode: p.MaxVolumesPerNode}
		if len(p.Topology) > 0 {
			resp.AccessibleTopology = &csi.Topology{Segments: p.Topology}
		}
		answer = resp
	case "NodeGetCapabilities":
		resp := &csi.NodeGetCapabilitiesResponse{}
		for _, c := range p.Capabilities {
			resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
				Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: c}},
			})
		}
		answer = resp
	case "NodeExpandVolume":
		req, _ := args.(*csi.NodeExpandVolumeRequest)
		answer = &csi.NodeExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}
	case "NodeGetVolumeStats":
		answer = &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES}}}
	case "NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume", "NodeUnpublishVolume":
		return nil // empty responses: reply is already zero
	default:
		if answer = p.controllerAnswer(method, args); answer == nil {
			return status.Error(codes.Unimplemented, fmt.Sprintf("plan: %s is not planned", method))
		}
	}
	m, ok := reply.(proto.Message)
	if !ok {
		return fmt.Errorf("plan: reply %T is not a proto message", reply)
	}
	proto.Merge(m, answer)
	return nil
}

// NewStream is not used by any CSI node call.
func (p *Planned) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, errors.New("plan: streaming calls are not supported")
}

// ParseCapabilities reads names such as STAGE_UNSTAGE_VOLUME (the csi
// package's enum names, with or without the NodeServiceCapability_RPC_
// prefix).
func ParseCapabilities(names []string) ([]csi.NodeServiceCapability_RPC_Type, error) {
	var out []csi.NodeServiceCapability_RPC_Type
	for _, n := range names {
		n = strings.TrimPrefix(strings.TrimSpace(n), "NodeServiceCapability_RPC_")
		if n == "" {
			continue
		}
		v, ok := csi.NodeServiceCapability_RPC_Type_value[n]
		if !ok || v == 0 {
			return nil, fmt.Errorf("unknown node capability %q (known: %s)", n, knownCapabilities())
		}
		out = append(out, csi.NodeServiceCapability_RPC_Type(v))
	}
	return out, nil
}

// knownCapabilities lists every named capability but UNKNOWN, in enum
// order (the numbering has gaps: spec 1.13 dropped VOLUME_CONDITION).
func knownCapabilities() string {
	var nums []int
	for v := range csi.NodeServiceCapability_RPC_Type_name {
		if v != 0 {
			nums = append(nums, int(v))
		}
	}
	sort.Ints(nums)
	names := make([]string, len(nums))
	for i, v := range nums {
		names[i] = csi.NodeServiceCapability_RPC_Type_name[int32(v)]
	}
	return strings.Join(names, ", ")
}
