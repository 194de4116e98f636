package rootdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/internal/loopdev/looptest"
)

// isMountPoint only reads the mount table: it must not run `umount` (as
// mount.New("") does at once, to probe its not-mounted behaviour), since
// cleanup asks it for every path it removes. A `umount` on PATH that
// records being run tells.
func TestIsMountPointRunsNothing(t *testing.T) {
	bin := t.TempDir()
	ran := filepath.Join(bin, "ran")
	script := "#!/bin/sh\necho \"$@\" >> " + ran + "\nexit 32\n"
	if err := os.WriteFile(filepath.Join(bin, "umount"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	for _, p := range []string{dir, "/proc", filepath.Join(dir, "absent")} {
		mnt, err := IsMountPoint(p)
		if p == "/proc" && (!mnt || err != nil) {
			t.Errorf("isMountPoint(/proc) = %t, %v; want a mount point", mnt, err)
		}
		if p == dir && (mnt || err != nil) {
			t.Errorf("isMountPoint(%s) = %t, %v; want a plain directory", p, mnt, err)
		}
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("isMountPoint ran umount: %q", b)
	}
}

// The simulator's block volume teardown beside another process that
// attaches its own files to every loop device number the teardown frees
// (another pod's block volume on the node): 50 volumes torn down at once,
// each device held open a moment by a prober as udev does, and no foreign
// device may be detached.
func TestDetachFileDeviceBesideOthers(t *testing.T) {
	looptest.Require(t)
	if !looptest.InPrivateMounts(t) {
		return
	}
	looptest.Stress(t, 50, looptest.Teardown{Attach: AttachFileDevice, Detach: DetachFileDevice})
}

// TestDetachFileDeviceBesideOthers's window made certain: the device is
// freed while the teardown waits between two tries, and another process
// takes its number at once.
func TestDetachFileDeviceDeferredThenReused(t *testing.T) {
	looptest.Require(t)
	if !looptest.InPrivateMounts(t) {
		return
	}
	if !looptest.DeferredThenReused(t, looptest.Teardown{Attach: AttachFileDevice, Detach: DetachFileDevice}) {
		t.Skip("the freed number went to another process first: the window could not be set up")
	}
}
