package volumemanager

// pluginmanager.go follows pkg/kubelet/pluginmanager (operationexecutor
// RegisterPlugin) over the CSI plugin's registration.

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// Register does what node-driver-registrar and the kubelet's plugin manager
// do when a driver starts (docs/kubelet.md §13): the registrar asks the driver its
// name with GetPluginInfo and offers it on a registration socket; the
// kubelet validates the versions and calls NodeGetInfo, then records the
// node ID and topology. The kubelet itself never calls an Identity method.
func (k *VolumeManager) Register(ctx context.Context) (*csiplugin.Registration, error) {
	rctx, cancel := k.operationContext(ctx, csiclient.Labels{Component: "registrar", Operation: "GetDriverName"})
	info, err := k.IdentityClient.GetPluginInfo(rctx, &csi.GetPluginInfoRequest{})
	cancel()
	if err != nil {
		return nil, &csiplugin.RegistrationError{Step: "node-driver-registrar: GetPluginInfo", Err: err}
	}
	name := info.GetName()
	if name == "" {
		return nil, &csiplugin.RegistrationError{Step: "node-driver-registrar: GetPluginInfo", Err: fmt.Errorf("driver name is empty")}
	}
	// The registrar does not check the name: it listens on
	// plugins_registry/<name>-reg.sock, so "../x" would put its socket where
	// the kubelet's plugin watcher never looks, and a name that stays inside
	// fails at the kubelet's CSINode update (validateCSINodeDriver:
	// ValidateCSIDriverName). Either way the driver never registers; we fail
	// registration with the API server's message, before any path is built.
	if err := manifests.ValidateDriverName(name, field.NewPath("GetPluginInfo", "name")); err != nil {
		return nil, &csiplugin.RegistrationError{Step: "kubelet: RegisterPlugin", Err: fmt.Errorf("RegisterPlugin error -- %w", err)}
	}
	kctx, cancel := k.operationContext(ctx, csiclient.Labels{Component: "kubelet", Operation: "RegisterPlugin"})
	defer cancel()
	uid, from := csiplugin.NodeUID(k.Cluster, k.NodeName)
	k.Trace.Note(kctx, true, fmt.Sprintf("Node %q, uid %s: %s; pod-bound tokens carry it in kubernetes.io.node", k.NodeName, uid, from))
	k.Trace.Note(kctx, false, fmt.Sprintf("plugin watcher: %s/%s-reg.sock offers CSIPlugin %q, supported_versions [1.0.0]", k.Layout.RegistrationDir(), name, name))

	ni, err := k.NodeClient.NodeGetInfo(kctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return nil, &csiplugin.RegistrationError{Step: "kubelet: RegisterPlugin", Err: fmt.Errorf("RegisterPlugin error -- %w", err)}
	}
	reg, err := csiplugin.InstallCSIDriver(name, ni)
	if err != nil {
		return nil, &csiplugin.RegistrationError{Step: "kubelet: RegisterPlugin", Err: fmt.Errorf("RegisterPlugin error -- %w", err)}
	}
	reg.VendorVersion = info.GetVendorVersion()
	k.Drivers.Register(reg)
	k.Trace.Note(kctx, false, fmt.Sprintf("registered driver %q: CSINode drivers[] {nodeID: %q, topologyKeys: %v%s}",
		name, reg.NodeID, reg.CSINodeDriver.TopologyKeys, csiplugin.AllocatableText(reg.CSINodeDriver)))
	return reg, nil
}
