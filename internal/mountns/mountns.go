// Package mountns runs a test binary in a mount namespace of its own.
//
// Tests that mount as root (the e2e suite, the reference driver's) re-run
// themselves under `unshare -m --propagation private`, so that every mount
// they make, and every unmount a bug might make, stays inside it and never
// reaches the machine's.
package mountns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// markEnv marks the re-executed test binary.
const markEnv = "CSI_KUBELET_SIM_PRIVATE_MOUNTS"

// Main is a TestMain: as root, outside a private mount namespace, it runs
// the test binary again inside one and exits with its code; otherwise it
// runs the tests. what names the suite in the one error it can print.
func Main(m *testing.M, what string) {
	if os.Getenv(markEnv) == "" && os.Geteuid() == 0 {
		os.Exit(reexec(what))
	}
	os.Exit(m.Run())
}

func reexec(what string) int {
	args := append([]string{"-m", "--propagation", "private", os.Args[0]}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), markEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "%s: cannot enter a private mount namespace: %v\n", what, err)
	return 1
}
