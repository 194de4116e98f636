package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// DriverInfo is what the driver says of itself: the answers scenarios are
// derived from when no CSIDriver object is given.
type DriverInfo struct {
	Name          string
	VendorVersion string
	Node          []csi.NodeServiceCapability_RPC_Type
	// Controller is set when the plugin has the CONTROLLER_SERVICE.
	Controller             bool
	ControllerCapabilities []csi.ControllerServiceCapability_RPC_Type
	NodeID                 string
	Topology               map[string]string
	// NodeInfoErr is a failed NodeGetInfo (registration fails then).
	NodeInfoErr error
}

// HasNode tells whether the node service has a capability.
func (d *DriverInfo) HasNode(c csi.NodeServiceCapability_RPC_Type) bool {
	return slices.Contains(d.Node, c)
}

// HasController tells whether the controller service has a capability.
func (d *DriverInfo) HasController(c csi.ControllerServiceCapability_RPC_Type) bool {
	return d.Controller && slices.Contains(d.ControllerCapabilities, c)
}

// Stages: STAGE_UNSTAGE_VOLUME.
func (d *DriverInfo) Stages() bool {
	return d.HasNode(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
}

// Publishes: a controller with PUBLISH_UNPUBLISH_VOLUME (attach).
func (d *DriverInfo) Publishes() bool {
	return d.HasController(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
}

// Creates: a controller with CREATE_DELETE_VOLUME.
func (d *DriverInfo) Creates() bool {
	return d.HasController(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
}

// UnreachableError is a driver that does not answer at all: nothing
// listens on the socket or the calls time out. A driver that answers with
// an error, Unavailable included, is reachable.
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string {
	if csiclient.Classify(e.Err) == csiclient.NotListening {
		return "the driver does not answer: " + csiclient.Explain(e.Err)
	}
	return fmt.Sprintf("the driver does not answer: %v (is it running and listening on the socket?)", e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// probeLabels mark the calls conformance makes to learn about the driver.
var probeLabels = csiclient.Labels{Component: "check", Operation: "Probe"}

// Probe asks the driver what it is and can do: GetPluginInfo,
// GetPluginCapabilities, ControllerGetCapabilities (with a controller),
// NodeGetCapabilities and NodeGetInfo. Every call is recorded in trace.
// A driver that cannot be reached gives an *UnreachableError.
func Probe(ctx context.Context, conn *csiclient.Recorder, timeout time.Duration) (*DriverInfo, error) {
	ctx = csiclient.WithLabels(ctx, probeLabels)
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, timeout) }
	// Nothing listening, or no answer in time; a driver that answered
	// with an error, Unavailable too, is running (csiclient.Classify).
	unreachable := func(err error) bool { return csiclient.Classify(err) != csiclient.Answered }
	info := &DriverInfo{}
	cctx, cancel := call()
	pi, err := csi.NewIdentityClient(conn).GetPluginInfo(cctx, &csi.GetPluginInfoRequest{})
	cancel()
	if err != nil {
		if unreachable(err) {
			return nil, &UnreachableError{Err: err}
		}
		return nil, fmt.Errorf("GetPluginInfo: %s", csiclient.Explain(err))
	}
	if pi.GetName() == "" {
		return nil, errors.New("GetPluginInfo returned an empty name: node-driver-registrar cannot register the driver (docs/kubelet.md §13)")
	}
	info.Name, info.VendorVersion = pi.GetName(), pi.GetVendorVersion()

	cctx, cancel = call()
	pc, err := csi.NewIdentityClient(conn).GetPluginCapabilities(cctx, &csi.GetPluginCapabilitiesRequest{})
	cancel()
	if err == nil {
		for _, c := range pc.GetCapabilities() {
			if c.GetService().GetType() == csi.PluginCapability_Service_CONTROLLER_SERVICE {
				info.Controller = true
			}
		}
	}
	if info.Controller {
		cctx, cancel = call()
		cc, err := csi.NewControllerClient(conn).ControllerGetCapabilities(cctx, &csi.ControllerGetCapabilitiesRequest{})
		cancel()
		if err == nil {
			for _, c := range cc.GetCapabilities() {
				info.ControllerCapabilities = append(info.ControllerCapabilities, c.GetRpc().GetType())
			}
		}
	}

	cctx, cancel = call()
	nc, err := csi.NewNodeClient(conn).NodeGetCapabilities(cctx, &csi.NodeGetCapabilitiesRequest{})
	cancel()
	if err != nil {
		if unreachable(err) {
			return nil, &UnreachableError{Err: err}
		}
		return nil, fmt.Errorf("NodeGetCapabilities: %w (the kubelet asks it before every stage and publish, docs/kubelet.md §11)", err)
	}
	for _, c := range nc.GetCapabilities() {
		info.Node = append(info.Node, c.GetRpc().GetType())
	}

	cctx, cancel = call()
	ni, err := csi.NewNodeClient(conn).NodeGetInfo(cctx, &csi.NodeGetInfoRequest{})
	cancel()
	if err != nil {
		info.NodeInfoErr = err
	} else {
		info.NodeID, info.Topology = ni.GetNodeId(), ni.GetAccessibleTopology().GetSegments()
	}
	return info, nil
}

// NodeCapabilityNames lists the node capabilities by name.
func (d *DriverInfo) NodeCapabilityNames() []string {
	out := make([]string, 0, len(d.Node))
	for _, c := range d.Node {
		out = append(out, capabilityName(int32(c), c.String(), removedNodeCapabilities))
	}
	slices.Sort(out)
	return out
}

// ControllerCapabilityNames lists the controller capabilities by name.
func (d *DriverInfo) ControllerCapabilityNames() []string {
	out := make([]string, 0, len(d.ControllerCapabilities))
	for _, c := range d.ControllerCapabilities {
		out = append(out, capabilityName(int32(c), c.String(), removedControllerCapabilities))
	}
	slices.Sort(out)
	return out
}

// Capabilities that CSI spec 1.13 (the module this is built with) no
// longer names but drivers built on older specs still report:
// VOLUME_CONDITION, node 4 and controller 11, replaced by
// GET_VOLUME_HEALTH and LIST_VOLUME_HEALTH. Kubelets up to 1.36 ask the
// node one.
var (
	removedNodeCapabilities       = map[int32]string{4: "VOLUME_CONDITION"}
	removedControllerCapabilities = map[int32]string{11: "VOLUME_CONDITION"}
)

// capabilityName is the spec's name of a capability, the name it had
// before the spec dropped it, or its number when it never had one here.
func capabilityName(n int32, name string, removed map[int32]string) string {
	if old, ok := removed[n]; ok {
		return old
	}
	if name == strconv.Itoa(int(n)) {
		return "UNKNOWN_" + name
	}
	return name
}
