package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// privateMountsEnv marks the re-executed test binary.
const privateMountsEnv = "CSI_KUBELET_SIM_PRIVATE_MOUNTS"

// TestMain runs the tests in a private mount namespace of their own (as
// root, unshare -m with private propagation), so that a bug in the
// simulator, a driver or a test can never touch the machine's own mounts:
// every mount they make, and every unmount, stays inside it.
func TestMain(m *testing.M) {
	if os.Getenv(privateMountsEnv) == "" && os.Geteuid() == 0 {
		os.Exit(reexecPrivate())
	}
	os.Exit(m.Run())
}

func reexecPrivate() int {
	args := append([]string{"-m", "--propagation", "private", os.Args[0]}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), privateMountsEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "e2e: cannot enter a private mount namespace: %v\n", err)
	return 1
}
