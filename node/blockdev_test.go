package node

import (
	"os"
	"path/filepath"
	"testing"
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
		mnt, err := isMountPoint(p)
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
