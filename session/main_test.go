package session

import (
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/internal/admissiontest"
)

// TestMain gives the in-process commands their admission helper.
func TestMain(m *testing.M) { admissiontest.Main(m, "../cmd/csi-kubelet-sim-admission") }
