package node

import (
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
)

// New fills the defaults: the newest release and the kubelet's 2 minute csiTimeout.
func TestNewDefaults(t *testing.T) {
	e := newUnregisteredEnv(t, "", newFakeDriver())
	if e.k.vm.Release.Minor != release.DefaultVersion.Minor || e.k.cfg.Timeout.String() != "2m0s" {
		t.Errorf("defaults: version %v, timeout %v", e.k.vm.Release.Version, e.k.cfg.Timeout)
	}
	if e.k.Paths().Root != e.root {
		t.Errorf("Paths().Root = %q, want %q", e.k.Paths().Root, e.root)
	}
}
