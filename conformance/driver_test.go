package conformance

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

// Probe against the fake driver in-process: what the driver says of
// itself, the calls in order, and the errors that stop a run.
func TestProbe(t *testing.T) {
	controllerCaps := &csi.ControllerGetCapabilitiesResponse{}
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME, csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
	} {
		controllerCaps.Capabilities = append(controllerCaps.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}},
		})
	}
	tests := []struct {
		name       string
		setup      func(*csifake.Driver)
		wantErr    string
		unreach    bool
		wantCalls  []string
		controller []string
		nodeInfo   string // NodeInfoErr
	}{
		{
			name:      "node only",
			wantCalls: []string{"GetPluginInfo", "GetPluginCapabilities", "NodeGetCapabilities", "NodeGetInfo"},
		},
		{
			name: "with a controller",
			setup: func(d *csifake.Driver) {
				d.Update(func(c *csifake.Config) {
					c.PluginCapabilities = []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE}
				})
				d.SetResponse("ControllerGetCapabilities", controllerCaps)
			},
			wantCalls:  []string{"GetPluginInfo", "GetPluginCapabilities", "ControllerGetCapabilities", "NodeGetCapabilities", "NodeGetInfo"},
			controller: []string{"CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME"},
		},
		{
			// A driver that answers Unavailable (csi-driver-host-path built
			// without a version does) is running: it is no dead socket.
			name:      "driver answers Unavailable",
			setup:     func(d *csifake.Driver) { d.FailNext("GetPluginInfo", codes.Unavailable, 1) },
			wantErr:   `GetPluginInfo: the driver answered with an error: code Unavailable, message "csifake: injected Unavailable"`,
			wantCalls: []string{"GetPluginInfo"},
		},
		{
			name:      "no answer within the timeout",
			setup:     func(d *csifake.Driver) { d.HangNext("GetPluginInfo", 1) },
			unreach:   true,
			wantErr:   "the driver does not answer: rpc error: code = DeadlineExceeded desc = context deadline exceeded (is it running and listening on the socket?)",
			wantCalls: []string{"GetPluginInfo"},
		},
		{
			name:      "GetPluginInfo fails",
			setup:     func(d *csifake.Driver) { d.Errors("GetPluginInfo", status.Error(codes.Internal, "boom")) },
			wantErr:   `GetPluginInfo: the driver answered with an error: code Internal, message "boom"`,
			wantCalls: []string{"GetPluginInfo"},
		},
		{
			name:      "empty name",
			setup:     func(d *csifake.Driver) { d.Update(func(c *csifake.Config) { c.Name = "" }) },
			wantErr:   "GetPluginInfo returned an empty name: node-driver-registrar cannot register the driver (docs/kubelet.md §13)",
			wantCalls: []string{"GetPluginInfo"},
		},
		{
			name:      "no NodeGetCapabilities",
			setup:     func(d *csifake.Driver) { d.FailNext("NodeGetCapabilities", codes.Unimplemented, 1) },
			wantErr:   "NodeGetCapabilities: rpc error: code = Unimplemented desc = csifake: injected Unimplemented (the kubelet asks it before every stage and publish, docs/kubelet.md §11)",
			wantCalls: []string{"GetPluginInfo", "GetPluginCapabilities", "NodeGetCapabilities"},
		},
		{
			name:      "NodeGetInfo fails: kept for the registration scenario",
			setup:     func(d *csifake.Driver) { d.FailNext("NodeGetInfo", codes.Internal, 1) },
			wantCalls: []string{"GetPluginInfo", "GetPluginCapabilities", "NodeGetCapabilities", "NodeGetInfo"},
			nodeInfo:  "rpc error: code = Internal desc = csifake: injected Internal",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := csifake.New(csifake.Config{
				Name: "test.csi.example.com", VendorVersion: "0.0.1", NodeID: "node-1-id",
				Topology:     map[string]string{"topology.example.com/zone": "a"},
				Capabilities: []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, csi.NodeServiceCapability_RPC_GET_VOLUME_STATS},
			})
			if tc.setup != nil {
				tc.setup(d)
			}
			trace := csiclient.NewTrace()
			info, err := Probe(context.Background(), &csiclient.Recorder{Next: d, Trace: trace}, 50*time.Millisecond)
			var methods []string
			for _, c := range d.Calls() {
				methods = append(methods, c.Method)
				if c.Labels != probeLabels {
					t.Errorf("%s labels %+v, want %+v", c.Method, c.Labels, probeLabels)
				}
			}
			if !slices.Equal(methods, tc.wantCalls) {
				t.Errorf("calls %q, want %q", methods, tc.wantCalls)
			}
			if n := len(trace.Calls()); n != len(tc.wantCalls) {
				t.Errorf("%d calls in the trace, want %d", n, len(tc.wantCalls))
			}
			if tc.wantErr != "" {
				var ue *UnreachableError
				if err == nil || err.Error() != tc.wantErr || errors.As(err, &ue) != tc.unreach {
					t.Errorf("error %v, want %q (unreachable %t)", err, tc.wantErr, tc.unreach)
				}
				if tc.unreach && errors.Unwrap(err) == nil {
					t.Errorf("UnreachableError without its cause")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Name != "test.csi.example.com" || info.VendorVersion != "0.0.1" {
				t.Errorf("identity %q %q", info.Name, info.VendorVersion)
			}
			if got := info.NodeCapabilityNames(); !slices.Equal(got, []string{"GET_VOLUME_STATS", "STAGE_UNSTAGE_VOLUME"}) {
				t.Errorf("node capabilities %q", got)
			}
			if !info.Stages() {
				t.Errorf("Stages = false")
			}
			if got := info.ControllerCapabilityNames(); !slices.Equal(got, tc.controller) && len(got)+len(tc.controller) > 0 {
				t.Errorf("controller capabilities %q, want %q", got, tc.controller)
			}
			if controller := tc.controller != nil; info.Controller != controller || info.Publishes() != controller || info.Creates() != controller {
				t.Errorf("controller %t, publishes %t, creates %t; want %t", info.Controller, info.Publishes(), info.Creates(), controller)
			}
			if tc.nodeInfo != "" {
				if info.NodeInfoErr == nil || info.NodeInfoErr.Error() != tc.nodeInfo {
					t.Errorf("NodeInfoErr %v, want %q", info.NodeInfoErr, tc.nodeInfo)
				}
				return
			}
			if info.NodeID != "node-1-id" || !maps.Equal(info.Topology, map[string]string{"topology.example.com/zone": "a"}) {
				t.Errorf("node info %q %v", info.NodeID, info.Topology)
			}
		})
	}
}
