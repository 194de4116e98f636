package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNoSpaceIsEnvironment: a root dir on a full file system (a 64 KiB
// tmpfs, filled so that the run's own files no longer fit at some step)
// is the machine's problem, not the input's: exit 3 (README, "Exit
// codes"), the error names ENOSPC, and the teardown leaves nothing. The
// test runs in the e2e tests' private mount namespace (TestMain).
func TestNoSpaceIsEnvironment(t *testing.T) {
	hit := 0
	// 4 KiB pages left free: the journal, the staging vol_data.json and
	// the pod's one take a page each; which step fails depends on how many
	// are left, and every one of them must exit 3.
	for _, free := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("free-%dpages", free), func(t *testing.T) {
			work := workDir(t)
			drv := startRefDriver(t, work)
			tiny := filepath.Join(work, "tiny")
			if err := os.Mkdir(tiny, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mount("tmpfs", tiny, "tmpfs", 0, "size=64k"); err != nil {
				t.Skipf("mount tmpfs: %v", err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(tiny, syscall.MNT_DETACH) })
			fill := make([]byte, (16-free)*4096)
			if err := os.WriteFile(filepath.Join(tiny, "fill"), fill, 0o644); err != nil {
				t.Fatalf("fill the tmpfs: %v", err)
			}
			root := filepath.Join(tiny, "root")
			r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode)
			if !strings.Contains(r.Stderr, "no space left on device") {
				if r.Code == 0 {
					t.Skipf("%d pages were enough for the whole run", free)
				}
				t.Fatalf("exit %d without ENOSPC\n%s", r.Code, r)
			}
			hit++
			wantCode(t, r, 3)
			oneLineError(t, r, "no space left on device")
			assertNothingLeft(t, root, "") // the tmpfs itself is the test's
			entries, _ := os.ReadDir(tiny)
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("left on the tmpfs: %v, want only the test's fill", names)
			}
		})
	}
	if hit == 0 {
		t.Error("no run met ENOSPC: the tmpfs was not full enough")
	}
}
