package conformance

// The test driver definition's declarations (--testdriver) against what
// the driver answers: its name, the capabilities a CSI call can confirm,
// its topology keys.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance/testdriver"
)

// declarationsScenario is the name of the scenario that checks the test
// driver definition.
const declarationsScenario = "testdriver/declarations"

// Scenarios are the scenarios of a run: with a test driver definition,
// the check of its declarations first, then Derive's.
func Scenarios(cfg Config, info *DriverInfo) []Scenario {
	out := derive(info, cfg.CSIDriver, cfg.Host, cfg.TestDriver)
	if cfg.TestDriver == nil {
		return out
	}
	decl := Scenario{Name: declarationsScenario, Section: "11",
		Checks: "the test driver definition's DriverInfo.Name, Capabilities and TopologyKeys against GetPluginInfo, the capabilities and NodeGetInfo",
		run:    checkDeclarations}
	return append([]Scenario{decl}, out...)
}

// capabilityCall is a declared capability a CSI answer confirms.
type capabilityCall struct {
	capability string
	answer     string // what confirms it, for messages
	has        func(*DriverInfo) bool
}

// capabilityCalls are the capabilities the driver's answers confirm or
// refute; the others need a cluster with real pods (UncheckedCapabilities).
var capabilityCalls = []capabilityCall{
	{testdriver.CapNodeExpansion, "NodeGetCapabilities has EXPAND_VOLUME", func(d *DriverInfo) bool { return d.HasNode(csi.NodeServiceCapability_RPC_EXPAND_VOLUME) }},
	{testdriver.CapControllerExpansion, "ControllerGetCapabilities has EXPAND_VOLUME", func(d *DriverInfo) bool {
		return d.HasController(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME)
	}},
	{testdriver.CapVolumeMountGroup, "NodeGetCapabilities has VOLUME_MOUNT_GROUP", func(d *DriverInfo) bool {
		return d.HasNode(csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	}},
	{testdriver.CapSnapshotDataSource, "ControllerGetCapabilities has CREATE_DELETE_SNAPSHOT", func(d *DriverInfo) bool {
		return d.HasController(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT)
	}},
	{testdriver.CapPVCDataSource, "ControllerGetCapabilities has CLONE_VOLUME", func(d *DriverInfo) bool {
		return d.HasController(csi.ControllerServiceCapability_RPC_CLONE_VOLUME)
	}},
	{testdriver.CapCapacity, "ControllerGetCapabilities has GET_CAPACITY", func(d *DriverInfo) bool {
		return d.HasController(csi.ControllerServiceCapability_RPC_GET_CAPACITY)
	}},
	// The kubelet sends SINGLE_NODE_SINGLE_WRITER for ReadWriteOncePod only
	// to a driver with SINGLE_NODE_MULTI_WRITER (docs/kubelet.md §8).
	{testdriver.CapReadWriteOncePod, "NodeGetCapabilities has SINGLE_NODE_MULTI_WRITER", func(d *DriverInfo) bool {
		return d.HasNode(csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER)
	}},
	{testdriver.CapTopology, "NodeGetInfo has accessible_topology", func(d *DriverInfo) bool { return len(d.Topology) > 0 }},
}

// CheckedCapabilities are the capability names conformance checks against
// the driver's answers.
func CheckedCapabilities() []string {
	out := make([]string, len(capabilityCalls))
	for i, c := range capabilityCalls {
		out[i] = c.capability
	}
	return out
}

// checkDeclarations: what the definition declares, the driver must answer;
// what the driver answers but the definition does not declare is a note
// (Kubernetes' suites would leave it untested).
func checkDeclarations(_ context.Context, r *scenarioRun) {
	def, file, info := r.env.cfg.TestDriver, r.env.cfg.TestDriverFile, r.env.info
	if def.DriverInfo.Name != info.Name {
		r.fail("", fmt.Sprintf("%s: DriverInfo.Name: %q declared, but GetPluginInfo answers %q", file, def.DriverInfo.Name, info.Name),
			"the tests' StorageClasses, inline volumes and CSIDriver lookups use the declared name, and the kubelet finds the driver only by the name it registers")
	}
	var undeclared []string
	for _, c := range capabilityCalls {
		declared, offered := def.Has(c.capability), c.has(info)
		switch {
		case declared && !offered:
			r.fail("", fmt.Sprintf("%s: DriverInfo.Capabilities.%s: declared, but not %s", file, c.capability, c.answer),
				"the storage tests of that capability would fail against this driver")
		case offered && !declared:
			undeclared = append(undeclared, fmt.Sprintf("%s (%s)", c.capability, c.answer))
		}
	}
	if len(undeclared) > 0 {
		r.note("%s: the driver offers, but DriverInfo.Capabilities does not declare: %s; Kubernetes' storage tests leave them untested", file, strings.Join(undeclared, ", "))
	}
	for _, k := range def.DriverInfo.TopologyKeys {
		if _, ok := info.Topology[k]; !ok {
			r.fail("13", fmt.Sprintf("%s: DriverInfo.TopologyKeys: %q declared, but NodeGetInfo's accessible_topology has %v", file, k, slices.Sorted(maps.Keys(info.Topology))),
				"the kubelet copies accessible_topology into the Node's labels, where the tests look for the declared keys")
		}
	}
	checkDeclaredObject(r, def, file, r.env.cfg.CSIDriver)
	var unchecked []string
	for _, c := range testdriver.Capabilities {
		if def.DriverInfo.Capabilities[c] && !slices.Contains(CheckedCapabilities(), c) && !slices.Contains(objectCapabilities, c) {
			unchecked = append(unchecked, c)
		}
	}
	if len(unchecked) > 0 {
		r.note("%s: declared, not checked against the driver's answers (no CSI call tells them; docs/conformance.md): %s", file, strings.Join(unchecked, ", "))
	}
}

// objectCapabilities are the capabilities checked against the CSIDriver
// object: the kubelet, not the driver, decides them from it.
var objectCapabilities = []string{testdriver.CapSELinuxMount, testdriver.CapFsGroup}

// checkDeclaredObject: what the definition declares that the kubelet
// decides from the CSIDriver object (obj nil: none given, the kubelet
// behaves as without one).
func checkDeclaredObject(r *scenarioRun, def *testdriver.Definition, file string, obj *storagev1.CSIDriver) {
	if len(def.InlineVolumes) > 0 {
		switch {
		case obj == nil:
			r.fail("2", file+": InlineVolumes: declared, but no CSIDriver object was given (-f)", "the kubelet refuses inline volumes of a driver without a CSIDriver object")
		case !slices.Contains(obj.Spec.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral):
			r.fail("2", fmt.Sprintf("%s: InlineVolumes: declared, but the CSIDriver's volumeLifecycleModes %q lack Ephemeral", file, obj.Spec.VolumeLifecycleModes), "the kubelet refuses inline volumes of this driver")
		}
	}
	seLinux := obj != nil && isTrue(obj.Spec.SELinuxMount)
	switch declared := def.Has(testdriver.CapSELinuxMount); {
	case declared && !seLinux:
		r.fail("6.2", file+": DriverInfo.Capabilities.seLinuxMount: declared, but the CSIDriver object has no seLinuxMount: true", "the kubelet mounts with the context= option only for a driver whose CSIDriver has seLinuxMount: true")
	case seLinux && !declared:
		r.note("%s: the CSIDriver has seLinuxMount: true, but DriverInfo.Capabilities does not declare seLinuxMount; Kubernetes' storage tests leave it untested", file)
	}
	if def.Has(testdriver.CapFsGroup) && obj != nil && obj.Spec.FSGroupPolicy != nil && *obj.Spec.FSGroupPolicy == storagev1.NoneFSGroupPolicy &&
		!r.env.info.HasNode(csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP) {
		r.fail("7.2", file+": DriverInfo.Capabilities.fsGroup: declared, but the CSIDriver's fsGroupPolicy is None and NodeGetCapabilities has no VOLUME_MOUNT_GROUP",
			"the kubelet then neither changes the volume's ownership nor hands the fsGroup to the driver, so the pod's fsGroup never applies")
	}
}
