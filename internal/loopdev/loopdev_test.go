package loopdev

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/internal/loopdev/looptest"
)

// A loop device detached by someone else between the glob of /sys/block and
// the read of its attributes answers ENODEV or ENXIO, not ENOENT; a listing
// must skip it rather than fail the caller's teardown (seen in CI).
func TestGone(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "read", Path: "/sys/block/loop1/loop/backing_file", Err: unix.ENODEV}, true},
		{&os.PathError{Op: "open", Path: "/sys/block/loop1/dev", Err: unix.ENXIO}, true},
		{&os.PathError{Op: "open", Path: "/sys/block/loop1/loop/backing_file", Err: unix.ENOENT}, true},
		{&os.PathError{Op: "read", Path: "/sys/block/loop1/loop/backing_file", Err: unix.EIO}, false},
		{nil, false},
	} {
		if got := gone(tc.err); got != tc.want {
			t.Errorf("gone(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// The name a device was found by is only a hint: between the look-up and
// the clear, the device goes and another process attaches its own file to
// the same number (made certain here by the BeforeClear hook). Detach must
// check the device on its descriptor and leave the other's alone.
func TestDetachSkipsReusedNumber(t *testing.T) {
	looptest.Require(t)
	if !looptest.InPrivateMounts(t) {
		return
	}
	dir, err := os.MkdirTemp("", "loopdev")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ours, other := filepath.Join(dir, "ours.img"), filepath.Join(dir, "other.img")
	for _, p := range []string{ours, other} {
		if err := os.WriteFile(p, make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Attach(ours, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Identify(ours)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Is(b) || s.ReadOnly || s.Autoclear {
		t.Fatalf("Attach(%s) = %+v, want a read-write device backed by %+v", ours, s, b)
	}
	var swapped *device
	defer func() {
		if swapped != nil {
			unix.IoctlSetInt(swapped.fd, unix.LOOP_CLR_FD, 0)
			swapped.close()
		}
	}()
	swap := func(name string) {
		if swapped != nil || name != s.Name {
			return
		}
		// The other process: our device goes (through its descriptor) and
		// its file takes the number.
		if _, err := DetachDevice(s, DetachOptions{Tries: 100, Wait: 10 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(s.Path(), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		file, err := unix.Open(other, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(file)
		var cfg unix.LoopConfig
		cfg.Fd = uint32(file)
		copy(cfg.Info.File_name[:63], ours) // even the name the kernel keeps is ours
		if err := unix.IoctlLoopConfigure(fd, &cfg); err != nil {
			unix.Close(fd)
			t.Skipf("%s went to another process first: %v", s.Path(), err)
		}
		swapped = &device{fd: fd}
	}
	left, err := Detach(b, DetachOptions{Tries: 3, Wait: time.Millisecond, BeforeClear: swap})
	if err != nil || len(left) > 0 {
		t.Fatalf("Detach: left %v, %v", left, err)
	}
	if swapped == nil {
		t.Fatal("the hook never ran")
	}
	info, err := unix.IoctlLoopGetStatus64(swapped.fd)
	if err != nil {
		t.Fatalf("the other process's device %s: %v", s.Path(), err)
	}
	if info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0 {
		t.Errorf("Detach detached the other process's device %s", s.Path())
	}
}
