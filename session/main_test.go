package session

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
)

// TestMain gives the in-process commands their admission helper: the one
// `make test` built ($CSI_KUBELET_SIM_ADMISSION), or one built here.
func TestMain(m *testing.M) {
	if os.Getenv(remote.HelperEnv) == "" {
		dir, err := os.MkdirTemp("", "ksim-helper-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		helper := filepath.Join(dir, remote.HelperName)
		out, err := exec.Command("go", "build", "-o", helper, "../cmd/csi-kubelet-sim-admission").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building the admission helper: %v\n%s", err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		os.Setenv(remote.HelperEnv, helper)
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}
