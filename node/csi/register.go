package csi

// register.go follows pkg/volume/csi/csi_plugin.go (RegisterPlugin, csiDrivers) and
// pkg/volume/csi/nodeinfomanager (InstallCSIDriver).

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"
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

// InstallCSIDriver is nodeinfomanager.InstallCSIDriver: the node ID
// annotation, topology segments as Node labels, and the CSINode entry.
func InstallCSIDriver(name string, ni *csi.NodeGetInfoResponse) (*Registration, error) {
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

func AllocatableText(d storagev1.CSINodeDriver) string {
	if d.Allocatable == nil || d.Allocatable.Count == nil {
		return ""
	}
	return fmt.Sprintf(", allocatable.count: %d", *d.Allocatable.Count)
}

// Drivers is the plugin's list of registered CSI drivers (csiDrivers in
// csi_plugin.go).
type Drivers struct {
	mu         sync.Mutex
	Registered map[string]*Registration
}

func (d *Drivers) registration(driver string) (*Registration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.Registered[driver]
	return r, ok
}

func (d *Drivers) Register(r *Registration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Registered[r.DriverName] = r
}

// names are the registered drivers' names, for a did-you-mean.
func (d *Drivers) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.Registered))
	for n := range d.Registered {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
