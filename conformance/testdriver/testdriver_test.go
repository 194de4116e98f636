package testdriver

import (
	"strings"
	"testing"
)

// hostpath is shaped like csi-driver-host-path's test-driver.yaml.
const hostpath = `StorageClass:
  FromFile: sc.yaml
SnapshotClass:
  FromName: true
DriverInfo:
  Name: hostpath.csi.k8s.io
  SupportedSizeRange:
    Min: 1Mi
  SupportedFsType:
    "": {}
    ext4: {}
  SupportedMountOption:
    noatime: {}
  Capabilities:
    block: true
    controllerExpansion: true
    exec: true
    multipods: true
    nodeExpansion: true
    persistence: true
    singleNodeVolume: true
    snapshotDataSource: true
    topology: true
    capacity: true
    readWriteOncePod: true
  TopologyKeys: [topology.hostpath.csi/node]
  RequiredAccessModes: [ReadWriteOnce]
  StressTestOptions:
    NumPods: 10
    NumRestarts: 10
InlineVolumes:
- Attributes: {size: 1Mi}
  ReadOnly: true
  Shared: true
Timeouts:
  PodStart: 5m
`

func TestParseHostpath(t *testing.T) {
	d, err := Parse("test-driver.yaml", []byte(hostpath))
	if err != nil {
		t.Fatal(err)
	}
	if d.DriverInfo.Name != "hostpath.csi.k8s.io" || d.StorageClass.FromFile != "sc.yaml" || !d.SnapshotClass.FromName {
		t.Errorf("read %+v", d)
	}
	if len(d.InlineVolumes) != 1 || !d.InlineVolumes[0].ReadOnly || !d.InlineVolumes[0].Shared || d.InlineVolumes[0].Attributes["size"] != "1Mi" {
		t.Errorf("InlineVolumes %+v", d.InlineVolumes)
	}
	if _, ok := d.DriverInfo.SupportedFsType["ext4"]; !ok || d.DriverInfo.SupportedSizeRange.Min != "1Mi" {
		t.Errorf("DriverInfo %+v", d.DriverInfo)
	}
	for _, c := range []string{CapBlock, CapNodeExpansion, CapControllerExpansion, CapTopology, CapReadWriteOncePod,
		// Unset, they follow controllerExpansion, as upstream.
		CapOnlineExpansion, CapOfflineExpansion} {
		if !d.Has(c) {
			t.Errorf("Has(%s) = false", c)
		}
	}
	if d.Has(CapVolumeMountGroup) || d.Has(CapRWX) {
		t.Error("undeclared capabilities read as declared")
	}
}

// TestParseJSON: the format is JSON too.
func TestParseJSON(t *testing.T) {
	d, err := Parse("td.json", []byte(`{"DriverInfo": {"Name": "x.csi", "Capabilities": {"onlineExpansion": false, "controllerExpansion": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Has(CapOnlineExpansion) || !d.Has(CapOfflineExpansion) {
		t.Errorf("an explicit onlineExpansion: false must win over controllerExpansion's default")
	}
}

// TestEveryCapability: each capability name of the format is read.
func TestEveryCapability(t *testing.T) {
	for _, c := range Capabilities {
		d, err := Parse("td.yaml", []byte("DriverInfo:\n  Name: x.csi\n  Capabilities:\n    "+c+": true\n"))
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		if !d.Has(c) {
			t.Errorf("%s: not declared after reading it", c)
		}
	}
	if len(Capabilities) != 24 {
		t.Errorf("%d capability names, want the 24 of v1.37", len(Capabilities))
	}
}

// TestStrict: what the upstream reader silently ignores is an error here,
// naming the file and the field, with the name it most likely meant.
func TestStrict(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"DriverInfo:\n  Name: x\n  Capabilites: {block: true}\n", `td.yaml: unknown field "DriverInfo.Capabilites" (did you mean "DriverInfo.Capabilities"?)`},
		{"DriverInfo:\n  Name: x\nStorageClass:\n  FromFle: sc.yaml\n", `td.yaml: unknown field "StorageClass.FromFle" (did you mean "StorageClass.FromFile"?)`},
		{"DriverInfo:\n  Name: x\nInlineVolumes:\n- Attributes: {}\n  Readonly: true\n", `unknown field "InlineVolumes[0].Readonly" (did you mean "InlineVolumes[0].ReadOnly"?)`},
		{"DriverInfo:\n  Name: x\n  Capabilities:\n    nodeExpanson: true\n", `td.yaml: unknown capability "nodeExpanson" in DriverInfo.Capabilities (did you mean "nodeExpansion"?)`},
		{"DriverInfo:\n  Name: x\n  Capabilities:\n    Block: true\n", `unknown capability "Block" in DriverInfo.Capabilities (did you mean "block"?)`},
		{"driverInfo:\n  Name: x\n", `unknown field "driverInfo" (did you mean "DriverInfo"?)`},
		{"DriverInfo:\n  Capabilities: {block: true}\n", "td.yaml: DriverInfo.Name not set"},
		{"DriverInfo:\n  Name: x\n  Capabilities: {block: yes please}\n", "td.yaml:"},
		{"DriverInfo:\n  Name: x\n  Capabilites: {}\n  Capabilities: {nodeExpanson: true}\n", `td.yaml: unknown field "DriverInfo.Capabilites" (did you mean "DriverInfo.Capabilities"?); unknown capability "nodeExpanson"`},
	} {
		_, err := Parse("td.yaml", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q): %v; want %q", c.doc, err, c.want)
		}
	}
}

func TestPath(t *testing.T) {
	for _, c := range [][3]string{
		{"deploy/test-driver.yaml", "sc.yaml", "deploy/sc.yaml"},
		{"test-driver.yaml", "sc.yaml", "sc.yaml"},
		{"/a/td.yaml", "/etc/sc.yaml", "/etc/sc.yaml"},
		{"/a/td.yaml", "../sc.yaml", "/sc.yaml"},
	} {
		if got := Path(c[0], c[1]); got != c[2] {
			t.Errorf("Path(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}
