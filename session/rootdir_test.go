package session

import (
	"os"
	"path/filepath"
	"testing"
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
		err := checkRootDir(dir)
		if (err != nil) != refused {
			t.Errorf("checkRootDir(%q) = %v, want refused %v", dir, err, refused)
			continue
		}
		if err != nil && ExitCode(err) != ExitUsage {
			t.Errorf("checkRootDir(%q): exit %d, want %d", dir, ExitCode(err), ExitUsage)
		}
	}
}
