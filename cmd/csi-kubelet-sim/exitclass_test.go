package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
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
		if got := session.IsEnvironmentErr(tc.err); got != tc.want {
			t.Errorf("isEnvironmentErr(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestDumpGoroutines: SIGQUIT's dump holds every goroutine's stack, this
// test's included.
func TestDumpGoroutines(t *testing.T) {
	var b strings.Builder
	dumpGoroutines(&b)
	if !strings.Contains(b.String(), "goroutine ") || !strings.Contains(b.String(), "TestDumpGoroutines") {
		t.Errorf("dump lacks the goroutines:\n%.500s", b.String())
	}
}
