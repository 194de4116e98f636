package csiclient

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
)

// DefaultPlannedControllerCapabilities are what `plan` answers for the
// controller unless told otherwise: a driver that provisions and attaches,
// so that a claim with a StorageClass plans as `run` would run it.
var DefaultPlannedControllerCapabilities = []string{"CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME"}

// controllerAnswer answers the identity and controller calls the
// simulated external-provisioner and external-attacher make; nil for a
// method it does not plan (a volume call without its capability). Every operation succeeds: CreateVolume's
// handle is the requested name (the volume the provisioner asked for),
// with the requested size and, for a driver with a topology, the node's
// segments.
func (p *Planned) controllerAnswer(method string, args any) proto.Message {
	switch path.Base(method) {
	case "GetPluginCapabilities":
		resp := &csi.GetPluginCapabilitiesResponse{}
		add := func(t csi.PluginCapability_Service_Type) {
			resp.Capabilities = append(resp.Capabilities, &csi.PluginCapability{
				Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}})
		}
		if len(p.ControllerCapabilities) > 0 {
			add(csi.PluginCapability_Service_CONTROLLER_SERVICE)
		}
		if len(p.Topology) > 0 {
			add(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS)
		}
		return resp
	case "ControllerGetCapabilities":
		resp := &csi.ControllerGetCapabilitiesResponse{}
		for _, c := range p.ControllerCapabilities {
			resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{
				Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
		}
		return resp
	case "CreateVolume", "DeleteVolume":
		if !p.hasController(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME) {
			return nil
		}
	case "ControllerPublishVolume", "ControllerUnpublishVolume":
		if !p.hasController(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) {
			return nil
		}
	}
	return p.volumeAnswer(method, args)
}

// volumeAnswer answers the controller's volume calls, each a success.
func (p *Planned) volumeAnswer(method string, args any) proto.Message {
	switch path.Base(method) {
	case "CreateVolume":
		req, _ := args.(*csi.CreateVolumeRequest)
		vol := &csi.Volume{VolumeId: req.GetName(), CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}
		if len(p.Topology) > 0 {
			vol.AccessibleTopology = []*csi.Topology{{Segments: p.Topology}}
		}
		return &csi.CreateVolumeResponse{Volume: vol}
	case "DeleteVolume":
		return &csi.DeleteVolumeResponse{}
	case "ControllerPublishVolume":
		return &csi.ControllerPublishVolumeResponse{}
	case "ControllerUnpublishVolume":
		return &csi.ControllerUnpublishVolumeResponse{}
	}
	return nil
}

func (p *Planned) hasController(t csi.ControllerServiceCapability_RPC_Type) bool {
	return slices.Contains(p.ControllerCapabilities, t)
}

// ParseControllerCapabilities reads names such as CREATE_DELETE_VOLUME
// (the csi package's enum names, with or without the
// ControllerServiceCapability_RPC_ prefix).
func ParseControllerCapabilities(names []string) ([]csi.ControllerServiceCapability_RPC_Type, error) {
	var out []csi.ControllerServiceCapability_RPC_Type
	for _, n := range names {
		n = strings.TrimPrefix(strings.TrimSpace(n), "ControllerServiceCapability_RPC_")
		if n == "" {
			continue
		}
		v, ok := csi.ControllerServiceCapability_RPC_Type_value[n]
		if !ok || v == 0 {
			return nil, fmt.Errorf("unknown controller capability %q (known: %s)", n, knownControllerCapabilities())
		}
		out = append(out, csi.ControllerServiceCapability_RPC_Type(v))
	}
	return out, nil
}

func knownControllerCapabilities() string {
	var names []string
	for v := int32(1); len(names) < len(csi.ControllerServiceCapability_RPC_Type_name)-1; v++ {
		if n, ok := csi.ControllerServiceCapability_RPC_Type_name[v]; ok {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}
