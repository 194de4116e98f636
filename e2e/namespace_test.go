package e2e

import (
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/internal/mountns"
)

// TestMain runs the tests in a private mount namespace of their own (as
// root, unshare -m with private propagation), so that a bug in the
// simulator, a driver or a test can never touch the machine's own mounts:
// every mount they make, and every unmount, stays inside it.
func TestMain(m *testing.M) { mountns.Main(m, "e2e") }
