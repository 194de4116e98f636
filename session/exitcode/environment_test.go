package exitcode

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// TestEnvironmentErr: the machine's errnos, however wrapped, are the
// environment; the input's and the driver's errors are not.
func TestEnvironmentErr(t *testing.T) {
	enospc := &os.PathError{Op: "write", Path: "/root/vol_data.json", Err: syscall.ENOSPC}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{enospc, true},
		{fmt.Errorf("MountVolume.SetUp failed: %w", enospc), true},
		{&os.PathError{Op: "mkdir", Path: "/r", Err: syscall.EROFS}, true},
		{&os.PathError{Op: "open", Path: "/r", Err: syscall.EMFILE}, true},
		{&os.PathError{Op: "open", Path: "/r", Err: syscall.ENOENT}, false},
		{errors.New("no space left on device"), false}, // words are not a cause
		{fmt.Errorf("spec.volumes[0]: %w", errors.New("invalid")), false},
	} {
		if got := IsEnvironment(tc.err); got != tc.want {
			t.Errorf("isEnvironmentErr(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
