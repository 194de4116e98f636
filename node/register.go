package node

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// Registration is what registering the driver on the node produced: the
// name the registrar reported (the only name the kubelet knows the driver
// by), and the Node and CSINode updates the kubelet would make.
type Registration struct {
	DriverName        string
	VendorVersion     string
	NodeID            string
	MaxVolumesPerNode int64
	Topology          map[string]string
	// CSINodeDriver is the spec.drivers[] entry of the node's CSINode.
	CSINodeDriver storagev1.CSINodeDriver
	// NodeLabels are the topology labels added to the Node.
	NodeLabels map[string]string
	// NodeIDAnnotation is the Node annotation csi.volume.kubernetes.io/nodeid.
	NodeIDAnnotation string
}

// RegistrationError is a failed registration; every volume of the driver
// then fails as unregistered.
type RegistrationError struct {
	Step string
	Err  error
}

func (e *RegistrationError) Error() string { return fmt.Sprintf("%s: %v", e.Step, e.Err) }
func (e *RegistrationError) Unwrap() error { return e.Err }

// register does what node-driver-registrar and the kubelet's plugin manager
// do when a driver starts (docs/kubelet.md §13): the registrar asks the driver its
// name with GetPluginInfo and offers it on a registration socket; the
// kubelet validates the versions and calls NodeGetInfo, then records the
// node ID and topology. The kubelet itself never calls an Identity method.
func (k *Kubelet) register(ctx context.Context) (*Registration, error) {
	rctx, cancel := k.operationContext(ctx, csiclient.Labels{Component: "registrar", Operation: "GetDriverName"})
	info, err := k.identityClient.GetPluginInfo(rctx, &csi.GetPluginInfoRequest{})
	cancel()
	if err != nil {
		return nil, &RegistrationError{Step: "node-driver-registrar: GetPluginInfo", Err: err}
	}
	name := info.GetName()
	if name == "" {
		return nil, &RegistrationError{Step: "node-driver-registrar: GetPluginInfo", Err: fmt.Errorf("driver name is empty")}
	}
	// The registrar does not check the name: it listens on
	// plugins_registry/<name>-reg.sock, so "../x" would put its socket where
	// the kubelet's plugin watcher never looks, and a name that stays inside
	// fails at the kubelet's CSINode update (validateCSINodeDriver:
	// ValidateCSIDriverName). Either way the driver never registers; we fail
	// registration with the API server's message, before any path is built.
	if err := manifests.ValidateDriverName(name, field.NewPath("GetPluginInfo", "name")); err != nil {
		return nil, &RegistrationError{Step: "kubelet: RegisterPlugin", Err: fmt.Errorf("RegisterPlugin error -- %w", err)}
	}
	kctx, cancel := k.operationContext(ctx, csiclient.Labels{Component: "kubelet", Operation: "RegisterPlugin"})
	defer cancel()
	uid, from := NodeUID(k.cluster, k.cfg.NodeName)
	k.trace.Note(kctx, true, fmt.Sprintf("Node %q, uid %s: %s; pod-bound tokens carry it in kubernetes.io.node", k.cfg.NodeName, uid, from))
	k.trace.Note(kctx, false, fmt.Sprintf("plugin watcher: %s/%s-reg.sock offers CSIPlugin %q, supported_versions [1.0.0]", k.paths.RegistrationDir(), name, name))

	ni, err := k.nodeClient.NodeGetInfo(kctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return nil, &RegistrationError{Step: "kubelet: RegisterPlugin", Err: fmt.Errorf("RegisterPlugin error -- %w", err)}
	}
	reg, err := installCSIDriver(name, ni)
	if err != nil {
		return nil, &RegistrationError{Step: "kubelet: RegisterPlugin", Err: fmt.Errorf("RegisterPlugin error -- %w", err)}
	}
	reg.VendorVersion = info.GetVendorVersion()
	k.drivers.register(reg)
	k.trace.Note(kctx, false, fmt.Sprintf("registered driver %q: CSINode drivers[] {nodeID: %q, topologyKeys: %v%s}",
		name, reg.NodeID, reg.CSINodeDriver.TopologyKeys, allocatableText(reg.CSINodeDriver)))
	return reg, nil
}

// installCSIDriver is nodeinfomanager.InstallCSIDriver: the node ID
// annotation, topology segments as Node labels, and the CSINode entry.
func installCSIDriver(name string, ni *csi.NodeGetInfoResponse) (*Registration, error) {
	if ni.GetNodeId() == "" {
		return nil, fmt.Errorf("error adding CSI driver node info: driverNodeID must not be empty")
	}
	segments := ni.GetAccessibleTopology().GetSegments()
	labels := map[string]string{}
	keys := make([]string, 0, len(segments))
	for key, v := range segments {
		labels[key] = v
		keys = append(keys, key)
	}
	sort.Strings(keys)
	annotation, _ := json.Marshal(map[string]string{name: ni.GetNodeId()})
	entry := storagev1.CSINodeDriver{Name: name, NodeID: ni.GetNodeId(), TopologyKeys: keys}
	if n := ni.GetMaxVolumesPerNode(); n > 0 {
		count := int32(math.MaxInt32)
		if n < math.MaxInt32 {
			count = int32(n)
		}
		entry.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
	}
	return &Registration{
		DriverName:        name,
		NodeID:            ni.GetNodeId(),
		MaxVolumesPerNode: ni.GetMaxVolumesPerNode(),
		Topology:          segments,
		CSINodeDriver:     entry,
		NodeLabels:        labels,
		NodeIDAnnotation:  string(annotation),
	}, nil
}

func allocatableText(d storagev1.CSINodeDriver) string {
	if d.Allocatable == nil || d.Allocatable.Count == nil {
		return ""
	}
	return fmt.Sprintf(", allocatable.count: %d", *d.Allocatable.Count)
}

// driverClient is csiClientGetter.Get / newCsiDriverClient: a volume can
// only be mounted through a driver registered under the exact name the
// volume names.
func (k *csiPlugin) driverRegistered(driver string) error {
	if _, ok := k.drivers.registration(driver); !ok {
		// The kubelet's words, then the simulator's hint for a typo.
		return fmt.Errorf("driver name %s not found in the list of registered CSI drivers%s", driver, manifests.DidYouMean(driver, k.drivers.names()))
	}
	return nil
}

// csiDrivers is the plugin's list of registered CSI drivers (csiDrivers in
// csi_plugin.go).
type csiDrivers struct {
	mu         sync.Mutex
	registered map[string]*Registration
}

func (d *csiDrivers) registration(driver string) (*Registration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.registered[driver]
	return r, ok
}

func (d *csiDrivers) register(r *Registration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.registered[r.DriverName] = r
}

// names are the registered drivers' names, for a did-you-mean.
func (d *csiDrivers) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.registered))
	for n := range d.registered {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
