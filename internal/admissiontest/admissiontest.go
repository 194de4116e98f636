// Package admissiontest gives a package's tests that run commands in
// process the admission helper they start for inputs with webhooks.
package admissiontest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission/remote"
)

// Main runs the tests with the admission helper `make test` built
// ($CSI_KUBELET_SIM_ADMISSION), or with one built from pkg (the helper's
// package directory, relative to the test's) for the run and removed
// after it.
func Main(m *testing.M, pkg string) {
	if os.Getenv(remote.HelperEnv) != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "ksim-helper-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helper := filepath.Join(dir, remote.HelperName)
	out, err := exec.Command("go", "build", "-o", helper, pkg).CombinedOutput()
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
