package e2e

// `conformance --testdriver FILE`: Kubernetes' external storage test
// driver definition for the reference driver passes; a declared
// capability the driver lacks and a wrong DriverInfo.Name fail naming the
// declaration; an unknown field is bad input (exit 2) with a did-you-mean;
// the definition's InlineVolumes readOnly reaches NodePublishVolume.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// refTestDriver is the repository's definition for the reference driver.
func refTestDriver(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "fixtures", "testdriver", "refdriver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformanceTestDriver(t *testing.T) {
	t.Parallel()
	t.Run("refdriver-passes", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work)
		td := refTestDriver(t)
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", refCSIDriver), "--testdriver", td)
		if len(c.order) == 0 || c.order[0] != "testdriver/declarations" || !slices.Equal(c.order[1:], conformanceScenarios) {
			t.Errorf("scenarios %v, want testdriver/declarations then %v", c.order, conformanceScenarios)
		}
		s := c.scenarios["testdriver/declarations"]
		if s.Status != "pass" {
			t.Errorf("testdriver/declarations: %s: %s", s.Status, s.Message)
		}
		if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, td+": declared, not checked") || !strings.Contains(notes, "exec") {
			t.Errorf("notes %q: want the declared capabilities no CSI call tells", notes)
		}
		_, fail, _ := c.statuses()
		if !hostSELinux() && len(fail) > 0 {
			t.Errorf("failed: %v", fail)
		}
	})
	t.Run("inline-read-only", func(t *testing.T) {
		// The definition's InlineVolumes[0].ReadOnly, without --read-only,
		// satisfies a driver that demands readonly.
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work, "--fault", "NodePublishVolume=require-readonly")
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", refCSIDriver),
			"--testdriver", refTestDriver(t), "--focus", "^lifecycle/ephemeral$")
		if s := c.scenarios["lifecycle/ephemeral"]; s.Status != "pass" {
			t.Errorf("lifecycle/ephemeral: %s: %s", s.Status, s.Message)
		}
		wantCode(t, c.sim, 0)
	})
	t.Run("declared-but-missing", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work)
		td := writeFile(t, work, "testdriver.yaml", `DriverInfo:
  Name: ref.csi.kubelet-sim.io
  Capabilities:
    persistence: true
    nodeExpansion: true
    volumeMountGroup: true
`)
		c := runConformance(t, work, drv.Sock, "--testdriver", td, "--focus", "^testdriver/")
		s := c.scenarios["testdriver/declarations"]
		for _, want := range []string{
			td + ": DriverInfo.Capabilities.nodeExpansion: declared, but not NodeGetCapabilities has EXPAND_VOLUME",
			td + ": DriverInfo.Capabilities.volumeMountGroup: declared, but not NodeGetCapabilities has VOLUME_MOUNT_GROUP",
		} {
			if s.Status != "fail" || !strings.Contains(oneSpace(s.Message), want) {
				t.Errorf("testdriver/declarations: %s: %q; want a failure saying %q", s.Status, s.Message, want)
			}
		}
		wantCode(t, c.sim, 1)
	})
	t.Run("offered-not-declared-and-wrong-name", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work, "--node-expand")
		td := writeFile(t, work, "testdriver.yaml", "DriverInfo:\n  Name: ref.csi.example.com\n")
		c := runConformance(t, work, drv.Sock, "--testdriver", td, "--focus", "^testdriver/")
		s := c.scenarios["testdriver/declarations"]
		if want := td + `: DriverInfo.Name: "ref.csi.example.com" declared, but GetPluginInfo answers "ref.csi.kubelet-sim.io"`; s.Status != "fail" || !strings.Contains(oneSpace(s.Message), want) {
			t.Errorf("testdriver/declarations: %s: %q; want %q", s.Status, s.Message, want)
		}
		if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, "does not declare: nodeExpansion (NodeGetCapabilities has EXPAND_VOLUME)") {
			t.Errorf("notes %q: want the undeclared nodeExpansion", notes)
		}
		wantCode(t, c.sim, 1)
	})
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work)
		td := refTestDriver(t)
		r := runSim(t, "conformance", "--endpoint", "unix://"+drv.Sock, "--root-dir", filepath.Join(work, "root"), "--node-name", simNode,
			"-f", writeFile(t, work, "csidriver.yaml", refCSIDriver), "--testdriver", td, "--focus", "^testdriver/", "-v")
		wantCode(t, r, 0)
		for _, want := range []string{
			"  testdriver  " + td + ": DriverInfo.Name ref.csi.kubelet-sim.io, its declarations checked by testdriver/declarations",
			"=== testdriver/declarations: the test driver definition's DriverInfo.Name",
			"(docs/kubelet.md §11",
		} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("stdout lacks %q\n%s", want, r.Stdout)
			}
		}
	})
	t.Run("unknown-field", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work)
		td := writeFile(t, work, "testdriver.yaml", "DriverInfo:\n  Name: ref.csi.kubelet-sim.io\n  Capabilities:\n    nodeExpanson: true\nInlineVolume: []\n")
		r := runSim(t, "conformance", "--endpoint", "unix://"+drv.Sock, "--testdriver", td)
		wantCode(t, r, 2)
		for _, want := range []string{
			"--testdriver: " + td + `: unknown field "InlineVolume" (did you mean "InlineVolumes"?); unknown capability "nodeExpanson" in DriverInfo.Capabilities (did you mean "nodeExpansion"?)`,
		} {
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("stderr %q: want %q", r.Stderr, want)
			}
		}
	})
}

// TestConformanceTestDriverClass: StorageClass.FromFile's parameters,
// fsType and mountOptions, SupportedMountOption and SupportedSizeRange.Min
// reach CreateVolume and NodePublishVolume (the reference driver's echo
// fault quotes each request).
func TestConformanceTestDriverClass(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work, "--fault", "CreateVolume=echo:1", "--fault", "NodePublishVolume=echo")
	writeFile(t, work, "sc.yaml", `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: ref.csi.kubelet-sim.io
parameters:
  tier: gold
  csi.storage.k8s.io/fstype: ext4
  csi.storage.k8s.io/provisioner-secret-name: x
mountOptions: [noatime]
`)
	td := writeFile(t, work, "testdriver.yaml", `StorageClass: {FromFile: sc.yaml}
DriverInfo:
  Name: ref.csi.kubelet-sim.io
  SupportedSizeRange: {Min: 3Mi}
  SupportedMountOption: {nodiratime: {}}
`)
	c := runConformance(t, work, drv.Sock, "--testdriver", td, "--focus", "^lifecycle/persistent$", "--parallel", "1")
	v := c.summary.Volume
	// The Go form of the request the fault quotes.
	if v == nil || !strings.Contains(oneSpace(v.Error), `parameters:{key:"tier" value:"gold"})`) || !strings.Contains(oneSpace(v.Error), `required_bytes:3145728}`) ||
		!strings.Contains(oneSpace(v.Error), `mount:{fs_type:"ext4" mount_flags:"noatime" mount_flags:"nodiratime"}`) {
		t.Errorf("CreateVolume %+v: want the class's parameters (no csi.storage.k8s.io/ keys), 3Mi, ext4, noatime and nodiratime", v)
	}
	wantCode(t, c.sim, 1)
	// The same driver again (its CreateVolume fault is spent): the PV has
	// the class's fsType and mount options, the kubelet's mount_flags.
	c = runConformance(t, workDir(t), drv.Sock, "--testdriver", td, "--focus", "^lifecycle/persistent$", "--parallel", "1")
	s := c.scenarios["lifecycle/persistent"]
	if !strings.Contains(oneSpace(s.Message), `mount:{fs_type:"ext4" mount_flags:"noatime" mount_flags:"nodiratime"}`) {
		t.Errorf("lifecycle/persistent: %q: want NodePublishVolume with ext4, noatime and nodiratime", s.Message)
	}
	if v := c.summary.Volume; v == nil || !strings.Contains(v.Description, "3Mi") {
		t.Errorf("volume %+v: want a 3Mi one", v)
	}
}

// oneSpace folds runs of white space into one: the Go text form of a
// request (prototext) puts one or two spaces between fields at random,
// so that nobody relies on it.
func oneSpace(s string) string { return strings.Join(strings.Fields(s), " ") }
