package node

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// docs/kubelet.md §13, §21.2: the registrar asks GetPluginInfo; the kubelet
// then sends only NodeGetInfo {}.
func TestRegisterCalls(t *testing.T) {
	drv := newFakeDriver()
	e := newUnregisteredEnv(t, "", drv)
	reg, err := e.k.vm.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	calls := drv.Calls()
	var got []string
	for _, c := range calls {
		got = append(got, c.Labels.Component+":"+c.Method)
	}
	if want := []string{"registrar:GetPluginInfo", "kubelet:NodeGetInfo"}; !slices.Equal(got, want) {
		t.Fatalf("calls = %q, want %q", got, want)
	}
	if !proto.Equal(calls[1].Request, &csi.NodeGetInfoRequest{}) {
		t.Errorf("NodeGetInfo request = %v, want {}", calls[1].Request)
	}
	if reg.DriverName != testDriver || reg.NodeID != testNodeID || reg.VendorVersion != "v1.2.3" {
		t.Errorf("registration = %+v", reg)
	}
	if reg.NodeIDAnnotation != `{"hostpath.csi.k8s.io":"node-1-id"}` {
		t.Errorf("csi.volume.kubernetes.io/nodeid = %s", reg.NodeIDAnnotation)
	}
	if reg.CSINodeDriver.Name != testDriver || reg.CSINodeDriver.NodeID != testNodeID || reg.CSINodeDriver.Allocatable != nil || len(reg.CSINodeDriver.TopologyKeys) != 0 {
		t.Errorf("CSINode driver = %+v", reg.CSINodeDriver)
	}
}

// docs/kubelet.md §13: topology segments become Node labels and sorted
// topologyKeys; allocatable.count only when max_volumes_per_node > 0,
// capped at MaxInt32.
func TestRegisterTopologyAndAllocatable(t *testing.T) {
	tests := []struct {
		name      string
		topology  map[string]string
		max       int64
		wantKeys  []string
		wantCount *int32
	}{
		{"no topology, no limit", nil, 0, nil, nil},
		{"topology keys sorted", map[string]string{"zone": "z1", "topology.hostpath.csi/node": "node-1", "b": "x"}, 0, []string{"b", "topology.hostpath.csi/node", "zone"}, nil},
		{"max volumes", nil, 16, nil, ptrTo(int32(16))},
		{"max volumes capped", nil, math.MaxInt32 + 10, nil, ptrTo(int32(math.MaxInt32))},
		{"negative max volumes: none", nil, -1, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			drv := newFakeDriver()
			drv.Update(func(c *csifake.Config) { c.Topology, c.MaxVolumesPerNode = tc.topology, tc.max })
			e := newUnregisteredEnv(t, "", drv)
			reg, err := e.k.vm.Register(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(reg.CSINodeDriver.TopologyKeys, tc.wantKeys) {
				t.Errorf("topologyKeys = %q, want %q", reg.CSINodeDriver.TopologyKeys, tc.wantKeys)
			}
			wantLabels := tc.topology
			if wantLabels == nil {
				wantLabels = map[string]string{}
			}
			if !maps.Equal(reg.NodeLabels, wantLabels) {
				t.Errorf("Node labels = %v, want %v", reg.NodeLabels, wantLabels)
			}
			a := reg.CSINodeDriver.Allocatable
			switch {
			case tc.wantCount == nil && a != nil:
				t.Errorf("allocatable = %+v, want none", a)
			case tc.wantCount != nil && (a == nil || a.Count == nil || *a.Count != *tc.wantCount):
				t.Errorf("allocatable = %+v, want count %d", a, *tc.wantCount)
			}
		})
	}
}

// docs/kubelet.md §13: registration failures, and that a failed registration
// leaves the driver unknown to mounts.
func TestRegisterErrors(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(*csifake.Driver)
		wantStep  string
		wantParts []string
		wantCalls []string
		wantCode  codes.Code
	}{
		{
			name:      "empty node id",
			setup:     func(d *csifake.Driver) { d.Update(func(c *csifake.Config) { c.NodeID = "" }) },
			wantStep:  "kubelet: RegisterPlugin",
			wantParts: []string{"RegisterPlugin error -- ", "driverNodeID must not be empty"},
			wantCalls: []string{"GetPluginInfo", "NodeGetInfo"},
			wantCode:  codes.Unknown,
		},
		{
			name:      "NodeGetInfo fails",
			setup:     func(d *csifake.Driver) { d.Errors("NodeGetInfo", status.Error(codes.Unavailable, "not ready")) },
			wantStep:  "kubelet: RegisterPlugin",
			wantParts: []string{"RegisterPlugin error -- rpc error: code = Unavailable desc = not ready"},
			wantCalls: []string{"GetPluginInfo", "NodeGetInfo"},
			wantCode:  codes.Unavailable,
		},
		{
			name:      "GetPluginInfo fails",
			setup:     func(d *csifake.Driver) { d.Errors("GetPluginInfo", status.Error(codes.Unimplemented, "no identity")) },
			wantStep:  "node-driver-registrar: GetPluginInfo",
			wantParts: []string{"no identity"},
			wantCalls: []string{"GetPluginInfo"},
			wantCode:  codes.Unimplemented,
		},
		{
			name:      "empty driver name",
			setup:     func(d *csifake.Driver) { d.Update(func(c *csifake.Config) { c.Name = "" }) },
			wantStep:  "node-driver-registrar: GetPluginInfo",
			wantParts: []string{"driver name is empty"},
			wantCalls: []string{"GetPluginInfo"},
			wantCode:  codes.Unknown,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			drv := newFakeDriver()
			tc.setup(drv)
			e := newUnregisteredEnv(t, docs(csiDriverDoc("volumeLifecycleModes: [Ephemeral]"), podDoc("app-1", "pod-uid-1", inlineVol("scratch", ""))), drv)
			reg, err := e.k.vm.Register(context.Background())
			if err == nil || reg != nil {
				t.Fatalf("Register = %+v, %v; want an error", reg, err)
			}
			var re *csiplugin.RegistrationError
			if !errors.As(err, &re) || re.Step != tc.wantStep {
				t.Errorf("error %#v, want a RegistrationError at step %q", err, tc.wantStep)
			}
			for _, p := range tc.wantParts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not contain %q", err, p)
				}
			}
			if status.Code(err) != tc.wantCode {
				t.Errorf("status.Code = %v, want %v", status.Code(err), tc.wantCode)
			}
			var methods []string
			for _, c := range drv.Calls() {
				methods = append(methods, c.Method)
			}
			if !slices.Equal(methods, tc.wantCalls) {
				t.Errorf("calls = %q, want %q", methods, tc.wantCalls)
			}
			drv.ClearCalls()
			ve := volErr(t, e.mount("app-1"))
			if want := "driver name hostpath.csi.k8s.io not found in the list of registered CSI drivers"; !strings.HasSuffix(ve.Err.Error(), want) {
				t.Errorf("mount after failed registration: %q, want it to end with %q", ve.Err, want)
			}
			if len(drv.Calls()) != 0 {
				t.Errorf("mount reached the driver")
			}
		})
	}
}

// docs/kubelet.md §13: the kubelet knows the driver only by its registered name.
// A driver registering under another name than the volumes use fails them.
func TestRegisteredNameMismatch(t *testing.T) {
	drv := newFakeDriver()
	drv.Update(func(c *csifake.Config) { c.Name = "renamed.csi.k8s.io" })
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
	ve := volErr(t, e.mount("app-1"))
	const want = "kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name hostpath.csi.k8s.io not found in the list of registered CSI drivers"
	if ve.Err.Error() != want {
		t.Errorf("error = %q\nwant %q", ve.Err, want)
	}
}

func TestInstallCSIDriver(t *testing.T) {
	reg, err := csiplugin.InstallCSIDriver("d", &csi.NodeGetInfoResponse{NodeId: "n", AccessibleTopology: &csi.Topology{Segments: map[string]string{"z": "1", "a": "2"}}, MaxVolumesPerNode: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reg.CSINodeDriver.TopologyKeys, []string{"a", "z"}) || *reg.CSINodeDriver.Allocatable.Count != 3 || reg.NodeIDAnnotation != `{"d":"n"}` {
		t.Errorf("registration = %+v", reg)
	}
	if _, err := csiplugin.InstallCSIDriver("d", &csi.NodeGetInfoResponse{}); err == nil || err.Error() != "error adding CSI driver node info: driverNodeID must not be empty" {
		t.Errorf("empty node id: %v", err)
	}
}

// A driver name the API server would refuse in a CSINode fails
// registration before any path is built from it, and the kubelet never
// asks NodeGetInfo.
func TestRegisterRefusesDriverName(t *testing.T) {
	tests := []struct {
		name, driver, want string
	}{
		{"escapes the registry dir", "../../X", `kubelet: RegisterPlugin: RegisterPlugin error -- GetPluginInfo.name: Invalid value: "../../X": a lowercase RFC 1123 subdomain must consist of`},
		{"has a slash", "csi/x", `kubelet: RegisterPlugin: RegisterPlugin error -- GetPluginInfo.name: Invalid value: "csi/x": a lowercase RFC 1123 subdomain`},
		{"too long", strings.Repeat("a", 64), "kubelet: RegisterPlugin: RegisterPlugin error -- GetPluginInfo.name: Too long: may not be more than 63 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			drv := newFakeDriver()
			drv.Update(func(c *csifake.Config) { c.Name = tc.driver })
			e := newUnregisteredEnv(t, "", drv)
			_, err := e.k.vm.Register(context.Background())
			var re *csiplugin.RegistrationError
			if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error = %v, want a RegistrationError starting %q", err, tc.want)
			}
			if calls := drv.Calls(); len(calls) != 1 || calls[0].Method != "GetPluginInfo" {
				t.Errorf("calls = %v, want GetPluginInfo only", calls)
			}
		})
	}
}
