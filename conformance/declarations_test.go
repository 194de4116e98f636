package conformance

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance/testdriver"
)

// declare runs checkDeclarations of a definition against a driver.
func declare(t *testing.T, doc string, info *DriverInfo) *scenarioRun {
	t.Helper()
	def, err := testdriver.Parse("td.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	r := &scenarioRun{env: &runEnv{cfg: Config{TestDriver: def, TestDriverFile: "td.yaml"}, info: info}}
	checkDeclarations(context.Background(), r)
	return r
}

func failures(r *scenarioRun) string {
	var out []string
	for _, f := range r.failures {
		out = append(out, f.String())
	}
	return strings.Join(out, "\n")
}

// Each capability a CSI answer tells: declared without it fails naming the
// declaration; offered without the declaration is a note.
func TestDeclarationsEachCapability(t *testing.T) {
	offer := map[string]func(*DriverInfo){
		testdriver.CapNodeExpansion:       func(d *DriverInfo) { d.Node = append(d.Node, csi.NodeServiceCapability_RPC_EXPAND_VOLUME) },
		testdriver.CapVolumeMountGroup:    func(d *DriverInfo) { d.Node = append(d.Node, csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP) },
		testdriver.CapReadWriteOncePod:    func(d *DriverInfo) { d.Node = append(d.Node, csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER) },
		testdriver.CapTopology:            func(d *DriverInfo) { d.Topology = map[string]string{"zone": "a"} },
		testdriver.CapControllerExpansion: ctrl(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME),
		testdriver.CapSnapshotDataSource:  ctrl(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT),
		testdriver.CapPVCDataSource:       ctrl(csi.ControllerServiceCapability_RPC_CLONE_VOLUME),
		testdriver.CapCapacity:            ctrl(csi.ControllerServiceCapability_RPC_GET_CAPACITY),
	}
	if len(offer) != len(capabilityCalls) {
		t.Fatalf("%d capabilities tested, %d checked", len(offer), len(capabilityCalls))
	}
	for _, c := range capabilityCalls {
		doc := "DriverInfo:\n  Name: d.csi\n  Capabilities: {" + c.capability + ": true}\n"
		r := declare(t, doc, &DriverInfo{Name: "d.csi"})
		want := "td.yaml: DriverInfo.Capabilities." + c.capability + ": declared, but not " + c.answer
		if got := failures(r); !strings.Contains(got, want) {
			t.Errorf("%s declared, not offered: failures %q, want %q", c.capability, got, want)
		}
		info := &DriverInfo{Name: "d.csi"}
		offer[c.capability](info)
		if r := declare(t, doc, info); len(r.failures) > 0 {
			t.Errorf("%s declared and offered: %s", c.capability, failures(r))
		}
		r = declare(t, "DriverInfo: {Name: d.csi}\n", info)
		if len(r.failures) > 0 || !strings.Contains(strings.Join(r.notes, "\n"), "does not declare: "+c.capability+" (") {
			t.Errorf("%s offered, not declared: failures %q, notes %q; want a note", c.capability, failures(r), r.notes)
		}
	}
}

func ctrl(c csi.ControllerServiceCapability_RPC_Type) func(*DriverInfo) {
	return func(d *DriverInfo) {
		d.Controller = true
		d.ControllerCapabilities = append(d.ControllerCapabilities, c)
	}
}

func TestDeclarationsNameAndTopologyKeys(t *testing.T) {
	r := declare(t, "DriverInfo:\n  Name: d.csi\n  TopologyKeys: [zone, rack]\n  Capabilities: {exec: true, block: true}\n",
		&DriverInfo{Name: "e.csi", Topology: map[string]string{"zone": "a"}})
	got := failures(r)
	for _, want := range []string{
		`td.yaml: DriverInfo.Name: "d.csi" declared, but GetPluginInfo answers "e.csi"`,
		`td.yaml: DriverInfo.TopologyKeys: "rack" declared, but NodeGetInfo's accessible_topology has [zone]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("failures %q, want %q", got, want)
		}
	}
	if strings.Contains(got, `"zone" declared`) {
		t.Errorf("the offered key failed: %q", got)
	}
	if notes := strings.Join(r.notes, "\n"); !strings.Contains(notes, "declared, not checked against the driver's answers") || !strings.Contains(notes, "block, exec") {
		t.Errorf("notes %q: want block and exec as not checked", notes)
	}
}

// Scenarios puts the declarations first, only with a definition.
func TestScenariosWithDefinition(t *testing.T) {
	info := &DriverInfo{Name: "d.csi"}
	if s := Scenarios(Config{}, info); len(s) == 0 || s[0].Name == declarationsScenario {
		t.Errorf("without a definition: %v", s[0].Name)
	}
	if s := Scenarios(Config{TestDriver: &testdriver.Definition{}}, info); s[0].Name != declarationsScenario || len(s) != len(Derive(info, nil, Host{}))+1 {
		t.Errorf("with a definition: first %q, %d scenarios", s[0].Name, len(s))
	}
}

// What the kubelet decides from the CSIDriver object: inline volumes need
// the Ephemeral mode, seLinuxMount the object's seLinuxMount, fsGroup a
// policy other than None (or VOLUME_MOUNT_GROUP).
func TestDeclarationsAgainstCSIDriver(t *testing.T) {
	doc := "DriverInfo:\n  Name: d.csi\n  Capabilities: {seLinuxMount: true, fsGroup: true}\nInlineVolumes: [{ReadOnly: true}]\n"
	def, err := testdriver.Parse("td.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	run := func(obj *storagev1.CSIDriver, info *DriverInfo) *scenarioRun {
		r := &scenarioRun{env: &runEnv{cfg: Config{TestDriver: def, TestDriverFile: "td.yaml", CSIDriver: obj}, info: info}}
		checkDeclarations(context.Background(), r)
		return r
	}
	info := &DriverInfo{Name: "d.csi"}
	got := failures(run(nil, info))
	for _, want := range []string{
		"td.yaml: InlineVolumes: declared, but no CSIDriver object was given (-f)",
		"td.yaml: DriverInfo.Capabilities.seLinuxMount: declared, but the CSIDriver object has no seLinuxMount: true",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no object: failures %q, want %q", got, want)
		}
	}
	none := storagev1.NoneFSGroupPolicy
	obj := csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
		s.FSGroupPolicy = &none
	})
	got = failures(run(obj, info))
	for _, want := range []string{
		`td.yaml: InlineVolumes: declared, but the CSIDriver's volumeLifecycleModes ["Persistent"] lack Ephemeral`,
		"td.yaml: DriverInfo.Capabilities.fsGroup: declared, but the CSIDriver's fsGroupPolicy is None and NodeGetCapabilities has no VOLUME_MOUNT_GROUP",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Persistent only, fsGroupPolicy None: failures %q, want %q", got, want)
		}
	}
	good := csiDriver(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
		s.SELinuxMount = ptr(true)
		s.FSGroupPolicy = &none
	})
	withVMG := &DriverInfo{Name: "d.csi", Node: []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP}}
	if r := run(good, withVMG); len(r.failures) > 0 {
		t.Errorf("a matching object: %s", failures(r))
	}
}

// A declared block capability selects lifecycle/block (no CSI answer
// tells it); without the declaration it is skipped, saying why.
func TestScenariosBlockDeclared(t *testing.T) {
	info := &DriverInfo{Name: "d.csi", Controller: true, ControllerCapabilities: []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}}
	block := func(cfg Config) Scenario {
		for _, s := range Scenarios(cfg, info) {
			if s.Name == "lifecycle/block" {
				return s
			}
		}
		t.Fatal("no lifecycle/block scenario")
		return Scenario{}
	}
	if s := block(Config{}); !strings.Contains(s.Skip, "block is not declared") {
		t.Errorf("without a definition: skip %q", s.Skip)
	}
	if s := block(Config{TestDriver: &testdriver.Definition{}}); !strings.Contains(s.Skip, "does not declare DriverInfo.Capabilities.block") {
		t.Errorf("a definition without block: skip %q", s.Skip)
	}
	def := &testdriver.Definition{}
	def.DriverInfo.Capabilities = map[string]bool{testdriver.CapBlock: true}
	s := block(Config{TestDriver: def})
	if os.Geteuid() == 0 && s.Skip != "" {
		t.Errorf("block declared, as root: skipped: %s", s.Skip)
	}
	if os.Geteuid() != 0 && !strings.Contains(s.Skip, "need root") {
		t.Errorf("block declared, not root: skip %q", s.Skip)
	}
}
