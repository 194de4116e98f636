package e2e

// conformance's block and expansion scenarios: a declared block capability
// runs a volumeMode: Block volume through the kubelet's block flow, and a
// driver with node EXPAND_VOLUME gets a grown PersistentVolume; each fails
// when the driver does not do what was declared or offered.

import (
	"strings"
	"testing"
)

const blockTestDriver = `DriverInfo:
  Name: ref.csi.kubelet-sim.io
  Capabilities:
    persistence: true
    block: true
`

func TestConformanceBlockAndExpansion(t *testing.T) {
	t.Parallel()
	t.Run("block-declared-passes", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work)
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", refCSIDriver),
			"--testdriver", writeFile(t, work, "testdriver.yaml", blockTestDriver), "--focus", "^lifecycle/block$")
		if s := c.scenarios["lifecycle/block"]; s.Status != "pass" {
			t.Errorf("lifecycle/block: %s: %s", s.Status, s.Message)
		}
		wantCode(t, c.sim, 0)
	})
	t.Run("block-declared-driver-refuses", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work, "--block=false")
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", refCSIDriver),
			"--testdriver", writeFile(t, work, "testdriver.yaml", blockTestDriver), "--focus", "^lifecycle/block$")
		if s := c.scenarios["lifecycle/block"]; s.Status != "fail" {
			t.Errorf("lifecycle/block against a driver without block volumes: %s: %s", s.Status, s.Message)
		}
		wantCode(t, c.sim, 1)
	})
	t.Run("block-not-declared-skips", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work)
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", refCSIDriver), "--focus", "^lifecycle/(block|persistent)$")
		if s := c.scenarios["lifecycle/block"]; s.Status != "skip" || !strings.Contains(s.Message, "block is not declared") {
			t.Errorf("lifecycle/block without a definition: %s: %q, want a skip saying it is not declared", s.Status, s.Message)
		}
		wantCode(t, c.sim, 0)
	})
	t.Run("expansion-passes", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work, "--node-expand")
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", refCSIDriver), "--focus", "^expansion/node$")
		s := c.scenarios["expansion/node"]
		if s.Status != "pass" {
			t.Errorf("expansion/node: %s: %s", s.Status, s.Message)
		}
		// The kubelet expands at mount and again in use (docs/kubelet.md
		// §15.4): two calls, each asking for the PV's 2Gi.
		notes := strings.Join(s.Notes, "\n")
		if n := strings.Count(notes, "asked for 2147483648 bytes"); n != 2 {
			t.Errorf("notes %q: want two NodeExpandVolume calls for 2Gi, got %d", notes, n)
		}
		wantCode(t, c.sim, 0)
	})
	t.Run("expansion-fails", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work, "--node-expand", "--fault", "NodeExpandVolume=Internal")
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", refCSIDriver), "--focus", "^expansion/node$")
		if s := c.scenarios["expansion/node"]; s.Status != "fail" || !strings.Contains(s.Message, "NodeExpandVolume") {
			t.Errorf("expansion/node against a failing NodeExpandVolume: %s: %q", s.Status, s.Message)
		}
		wantCode(t, c.sim, 1)
	})
	t.Run("expansion-not-offered-skips", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startRefDriver(t, work)
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", refCSIDriver), "--focus", "^expansion/node$|^lifecycle/persistent$")
		if s := c.scenarios["expansion/node"]; s.Status != "skip" || !strings.Contains(s.Message, "EXPAND_VOLUME") {
			t.Errorf("expansion/node without EXPAND_VOLUME: %s: %q", s.Status, s.Message)
		}
	})
}
