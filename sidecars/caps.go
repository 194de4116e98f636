package sidecars

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// driverCaps is what the sidecars learn from the driver when they start:
// its name, its plugin capabilities and its controller capabilities
// (external-provisioner GetDriverName, GetDriverCapabilities; the
// external-attacher's supportsControllerCapabilities).
type driverCaps struct {
	name       string
	plugin     map[csi.PluginCapability_Service_Type]bool
	controller map[csi.ControllerServiceCapability_RPC_Type]bool
}

func (d *driverCaps) has(t csi.ControllerServiceCapability_RPC_Type) bool { return d.controller[t] }

// topology is the provisioner's supportsTopology: the plugin capability
// VOLUME_ACCESSIBILITY_CONSTRAINTS (the sidecar's Topology gate is GA).
func (d *driverCaps) topology() bool {
	return d.plugin[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS]
}

// start asks the controller socket what the driver is, once.
func (c *Controllers) start(ctx context.Context) (*driverCaps, error) {
	if c.caps != nil {
		return c.caps, nil
	}
	cctx, cancel := c.callContext(ctx, "provision", "Start", "")
	defer cancel()
	id := csi.NewIdentityClient(c.cfg.Conn)
	info, err := id.GetPluginInfo(cctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("external-provisioner: GetPluginInfo on the controller socket: %w", err)
	}
	caps := &driverCaps{name: info.GetName(), plugin: map[csi.PluginCapability_Service_Type]bool{}, controller: map[csi.ControllerServiceCapability_RPC_Type]bool{}}
	pc, err := id.GetPluginCapabilities(cctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		return nil, fmt.Errorf("external-provisioner: GetPluginCapabilities: %w", err)
	}
	for _, p := range pc.GetCapabilities() {
		caps.plugin[p.GetService().GetType()] = true
	}
	if caps.plugin[csi.PluginCapability_Service_CONTROLLER_SERVICE] {
		cc, err := csi.NewControllerClient(c.cfg.Conn).ControllerGetCapabilities(cctx, &csi.ControllerGetCapabilitiesRequest{})
		switch {
		case status.Code(err) == codes.Unimplemented:
		case err != nil:
			return nil, fmt.Errorf("external-provisioner: ControllerGetCapabilities: %w", err)
		}
		for _, x := range cc.GetCapabilities() {
			caps.controller[x.GetRpc().GetType()] = true
		}
	}
	c.caps = caps
	// The sidecar's identity, as it writes it into every PV it creates:
	// the start time in milliseconds, a random number and the driver.
	c.identity = strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + strconv.Itoa(rand.IntN(10000)) + "-" + caps.name
	return caps, nil
}

// Provisions tells whether the external-provisioner would serve claims
// of the driver registered on the node: the controller socket names the
// same driver and offers CREATE_DELETE_VOLUME. It asks the driver as
// the provisioner does when it starts (once; Prepare reuses the answer).
// why says what decided, for the trace.
func (c *Controllers) Provisions(ctx context.Context, driver string) (ok bool, why string) {
	caps, err := c.start(ctx)
	switch {
	case err != nil:
		return false, fmt.Sprintf("the driver's controller capabilities could not be read (%v)", err)
	case caps.name != driver:
		return false, fmt.Sprintf("the controller socket %s serves driver %q, not %q", c.controllerText(), caps.name, driver)
	case !caps.has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME):
		return false, fmt.Sprintf("the driver's controller (%s) does not offer CREATE_DELETE_VOLUME", c.controllerText())
	}
	return true, fmt.Sprintf("the driver's controller (%s) offers CREATE_DELETE_VOLUME", c.controllerText())
}
