// Package testdriver reads the test driver definition of Kubernetes'
// external storage tests (`e2e.test -storage.testdriver=FILE`,
// test/e2e/storage/external in k8s.io/kubernetes), which many CSI drivers
// keep in their repository, so that conformance can be told what the
// driver is and does the way Kubernetes' own storage tests are.
//
// The types mirror the field names of driverDefinition and DriverInfo as
// of Kubernetes v1.37 (the file has no json tags: the Go names are the
// keys). Unlike the upstream reader, which silently ignores unknown fields
// (a typo disables a capability without a word), Load refuses them, and
// unknown capability names too, each with the name it most likely meant.
package testdriver

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// Definition is the whole file.
type Definition struct {
	DriverInfo            DriverInfo
	StorageClass          ClassSource
	VolumeAttributesClass struct {
		FromFile              string
		FromExistingClassName string
	}
	SnapshotClass      ClassSource
	GroupSnapshotClass ClassSource
	InlineVolumes      []InlineVolume
	ClientNodeName     string
	NodeSelectors      map[string]string
	Timeouts           map[string]string
}

// ClassSource says where the tests get a class: made from the driver's
// name (FromName), from a manifest (FromFile, relative to the definition
// file), or one that exists in the cluster (FromExistingClassName).
type ClassSource struct {
	FromName              bool
	FromFile              string
	FromExistingClassName string
}

// InlineVolume is a CSI ephemeral inline volume the tests may use.
type InlineVolume struct {
	Attributes map[string]string
	Shared     bool
	ReadOnly   bool
}

// DriverInfo is the storage framework's DriverInfo.
type DriverInfo struct {
	Name                 string
	InTreePluginName     string
	TestTags             []any
	MaxFileSize          int64
	SupportedSizeRange   SizeRange
	SupportedFsType      map[string]struct{}
	SupportedMountOption map[string]struct{}
	RequiredMountOption  map[string]struct{}
	// Capabilities are read as names to bool; Load checks the names.
	Capabilities                         map[string]bool
	RequiredAccessModes                  []string
	TopologyKeys                         []string
	NumAllowedTopologies                 int
	StressTestOptions                    *struct{ NumPods, NumRestarts int }
	VolumeSnapshotStressTestOptions      *struct{ NumPods, NumSnapshots int }
	VolumeModifyStressTestOptions        *struct{ NumPods int }
	PerformanceTestOptions               *PerformanceTestOptions
	VolumeGroupSnapshotStressTestOptions *struct{ NumPods, NumSnapshots int }
}

// SizeRange bounds the volumes' sizes, as quantities ("1Gi").
type SizeRange struct {
	Max string
	Min string
}

// PerformanceTestOptions are the provisioning performance test's.
type PerformanceTestOptions struct {
	ProvisioningOptions *struct {
		VolumeSize      string
		Count           int
		ExpectedMetrics *struct {
			AvgLatency int64
			Throughput float64
		}
	}
}

// The capability names of test/e2e/storage/framework/testdriver.go
// (v1.37).
const (
	CapPersistence                    = "persistence"
	CapBlock                          = "block"
	CapFsGroup                        = "fsGroup"
	CapVolumeMountGroup               = "volumeMountGroup"
	CapExec                           = "exec"
	CapSnapshotDataSource             = "snapshotDataSource"
	CapSnapshotMetadata               = "snapshotMetadata"
	CapVolumeGroupSnapshot            = "groupSnapshot"
	CapPVCDataSource                  = "pvcDataSource"
	CapMultiPODs                      = "multipods"
	CapRWX                            = "RWX"
	CapControllerExpansion            = "controllerExpansion"
	CapNodeExpansion                  = "nodeExpansion"
	CapOfflineExpansion               = "offlineExpansion"
	CapOnlineExpansion                = "onlineExpansion"
	CapVolumeLimits                   = "volumeLimits"
	CapSingleNodeVolume               = "singleNodeVolume"
	CapTopology                       = "topology"
	CapCapacity                       = "capacity"
	CapFSResizeFromSourceNotSupported = "FSResizeFromSourceNotSupported"
	CapReadWriteOncePod               = "readWriteOncePod"
	CapMultiplePVsSameID              = "multiplePVsSameID"
	CapReadOnlyMany                   = "capReadOnlyMany"
	CapSELinuxMount                   = "seLinuxMount"
)

// Capabilities are every capability name the format knows.
var Capabilities = []string{
	CapPersistence, CapBlock, CapFsGroup, CapVolumeMountGroup, CapExec,
	CapSnapshotDataSource, CapSnapshotMetadata, CapVolumeGroupSnapshot,
	CapPVCDataSource, CapMultiPODs, CapRWX, CapControllerExpansion,
	CapNodeExpansion, CapOfflineExpansion, CapOnlineExpansion,
	CapVolumeLimits, CapSingleNodeVolume, CapTopology, CapCapacity,
	CapFSResizeFromSourceNotSupported, CapReadWriteOncePod,
	CapMultiplePVsSameID, CapReadOnlyMany, CapSELinuxMount,
}

// Has tells whether a capability is declared true. onlineExpansion and
// offlineExpansion default to controllerExpansion when unset, as the
// upstream reader and suites have them.
func (d *Definition) Has(capability string) bool {
	v, ok := d.DriverInfo.Capabilities[capability]
	if !ok && (capability == CapOnlineExpansion || capability == CapOfflineExpansion) {
		return d.DriverInfo.Capabilities[CapControllerExpansion]
	}
	return v
}

// Path is where a file the definition names (StorageClass.FromFile, ...)
// is: relative names are relative to the definition file's directory.
func Path(defFile, name string) string {
	if name == "" || filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(filepath.Dir(defFile), name)
}

// Load reads a definition file (YAML or JSON) strictly: every unknown
// field and capability name is an error naming the file and the field,
// with the known name it most likely meant; so is a missing
// DriverInfo.Name, which the upstream reader requires too.
func Load(file string) (*Definition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, data)
}

// Parse is Load of data read from file.
func Parse(file string, data []byte) (*Definition, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var d Definition
	strict, err := kjson.UnmarshalStrict(j, &d, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	problems := manifests.StrictFieldErrors(strict, &d)
	problems = append(problems, unknownCapabilities(d.DriverInfo.Capabilities)...)
	if d.DriverInfo.Name == "" && len(problems) == 0 {
		problems = append(problems, "DriverInfo.Name not set: the CSI driver's name, as GetPluginInfo answers it")
	}
	if len(problems) == 0 {
		return &d, nil
	}
	// One line: errors are printed on one.
	return nil, fmt.Errorf("%s: %s", file, strings.Join(problems, "; "))
}

// unknownCapabilities words each capability name the format does not
// know: the upstream suites would never look at it.
func unknownCapabilities(caps map[string]bool) []string {
	var out []string
	for name := range caps {
		known := false
		for _, c := range Capabilities {
			known = known || c == name
		}
		if known {
			continue
		}
		msg := fmt.Sprintf("unknown capability %q in DriverInfo.Capabilities", name)
		if s := manifests.Suggest(name, Capabilities); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		out = append(out, msg)
	}
	sort.Strings(out)
	return out
}
