package rootdirs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
)

// System directories are refused as a root dir however they are spelled;
// a directory of its own below them is accepted.
func TestCheckRootDir(t *testing.T) {
	tmp := t.TempDir()
	link := filepath.Join(tmp, "to-root")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{ // dir -> refused
		"/":                        true,
		"//":                       true,
		"/var/../tmp":              true,
		"/var/lib/":                true,
		"/proc/1":                  true,
		"/sys/fs/cgroup":           true,
		link:                       true,
		"/var/lib/kubelet":         false,
		tmp:                        false,
		filepath.Join(tmp, "root"): false,
	}
	for dir, refused := range cases {
		err := Check(dir)
		if (err != nil) != refused {
			t.Errorf("Check(%q) = %v, want refused %v", dir, err, refused)
			continue
		}
		if err != nil && exitcode.Of(err) != exitcode.Usage {
			t.Errorf("Check(%q): exit %d, want %d", dir, exitcode.Of(err), exitcode.Usage)
		}
	}
}
