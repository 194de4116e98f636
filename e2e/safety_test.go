package e2e

// Safe on a real node (issue 9): the simulator touches only what it made.
// A root dir that already holds another program's mounts and files (as
// /var/lib/kubelet on a live node does) keeps them; the system's own
// directories are refused as a root dir by every command; a path the
// simulator needs that is someone else's stops the run untouched; and a
// volume whose teardown fails keeps its data until `cleanup` finishes it
// through the driver.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bindMount bind-mounts src onto dst (both made if missing); the work
// dir's clean-up unmounts it.
func bindMount(t *testing.T, src, dst string) {
	t.Helper()
	for _, d := range []string{src, dst} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount %s on %s: %v", src, dst, err)
	}
}

// sfTree lists every path under dir with its size (files) or "dir", for
// comparing a directory before and after a run.
func sfTree(dir string) []string {
	var out []string
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		switch {
		case err != nil:
			out = append(out, p+" error "+err.Error())
		case fi.IsDir():
			out = append(out, p+"/")
		default:
			out = append(out, fmt.Sprintf("%s %v %d", p, fi.Mode(), fi.Size()))
		}
		return nil
	})
	return out
}

// TestSafetyForeignMounts: the root dir holds another program's bind mount
// and files, and the very directories the simulator uses hold another
// pod's volume mount and another staged volume of the same driver (a real
// kubelet's, on a live node). After a run, every one of them is still
// mounted with its content, the simulator's own paths are gone, and the
// run passes.
func TestSafetyForeignMounts(t *testing.T) {
	t.Parallel()
	work := fltWork(t)
	root := filepath.Join(work, "root")
	src := filepath.Join(work, "other-data")
	writeFile(t, src, "data.txt", "another program's data\n")
	foreign := []string{
		filepath.Join(root, "other-app", "mnt"),
		targetPath(root, "11111111-2222-3333-4444-555555555555", "pv-other"),
		stagingPath(root, refDriverName, "vol-other"),
	}
	for _, m := range foreign {
		bindMount(t, src, m)
	}
	writeFile(t, root, "other-app/config.txt", "mine\n")
	before := sfTree(root)

	drv := fltStartRef(t, work)
	for _, output := range []string{"json", "text"} {
		r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
			"--node-name", simNode, "-o", output)
		wantCode(t, r, 0)
		for _, m := range foreign {
			if !isMountPoint(m) {
				t.Errorf("-o %s: the foreign mount %s was unmounted", output, m)
			} else if got := readFile(filepath.Join(m, "data.txt")); got != "another program's data\n" {
				t.Errorf("-o %s: %s/data.txt reads %q", output, m, got)
			}
		}
		if got := readFile(filepath.Join(root, "other-app", "config.txt")); got != "mine\n" {
			t.Errorf("-o %s: other-app/config.txt reads %q", output, got)
		}
		// The simulator's own paths are gone; what was there before is
		// all that is there now.
		if after := sfTree(root); !slices.Equal(after, before) {
			t.Errorf("-o %s: the root dir changed:\n before %q\n after  %q", output, before, after)
		}
		if output == "json" {
			lb := fmxLeftBehind(t, parseTrace(t, r))
			if !lb.Clean || len(lb.Left) > 0 || len(lb.Mounts) > 0 || lb.Journal != "" {
				t.Errorf("left_behind %+v, want clean: nothing of the run is left and the foreign mounts are not the run's", lb)
			}
		} else if !strings.Contains(r.Stdout, "\n  left behind nothing\n") {
			t.Errorf("the text summary does not say `left behind nothing`:\n%s", r.Stdout)
		}
	}
}

// TestSafetySystemRoots: `/` and the system's own directories (by any
// spelling: a symlink, a relative path, a dot-dot) are refused as a root
// dir by every command that takes one, exit 2, before anything is made and
// whether or not the driver is there.
func TestSafetySystemRoots(t *testing.T) {
	t.Parallel()
	work := fltWork(t)
	drv := fltStartRef(t, work)
	link := filepath.Join(work, "link-to-root")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	roots := []string{"/", "//", "/var", "/var/../var/lib", "/tmp", "/usr", "/etc", "/home", "/run", "/proc/x", "/sys/fs", "/dev/shm", link}
	endpoints := map[string]string{"driver": "unix://" + drv.Sock, "no driver": "unix://" + filepath.Join(work, "none.sock")}
	// What a run would make in its root dir.
	made := []string{"pods", "plugins", "plugins_registry", ".csi-kubelet-sim"}
	existed := map[string]bool{}
	for _, m := range made {
		for _, r := range []string{"/", "/var", "/var/lib", "/tmp", "/usr", "/etc", "/home", "/run"} {
			existed[filepath.Join(r, m)] = fltExists(filepath.Join(r, m))
		}
	}
	tried := 0
	for _, cmd := range []string{"run", "plan", "cleanup", "load", "conformance"} {
		for epName, ep := range endpoints {
			for _, root := range roots {
				var args []string
				switch cmd {
				case "plan":
					if epName != "driver" {
						continue // plan takes no driver
					}
					args = []string{"plan", "-f", sample(t, "staged")}
				case "cleanup", "conformance":
					args = []string{cmd, "--endpoint", ep}
				default:
					args = []string{cmd, "-f", sample(t, "staged"), "--endpoint", ep}
				}
				args = append(args, "--root-dir", root, "--node-name", simNode)
				r := runSim(t, args...)
				tried++
				if r.Code != 2 {
					t.Errorf("%s --root-dir %s (%s): exit %d, want 2\n%s", cmd, root, epName, r.Code, r)
					continue
				}
				// The message names the directory as the command read it.
				oneLineError(t, r, "--root-dir /")
			}
		}
	}
	for p, was := range existed {
		if !was && fltExists(p) {
			t.Errorf("%s was made although every root dir was refused", p)
		}
	}
	if fltExists("/proc/x") {
		t.Errorf("/proc/x exists")
	}
	t.Logf("%d system root dirs refused", tried)
}

// TestSafetyInTheWay: a directory the simulator would make for the pod or
// the volume already exists and is someone else's: the run stops with exit
// 3 naming it before the driver stages or publishes anything there, and
// the directory (and what is in it) is untouched.
func TestSafetyInTheWay(t *testing.T) {
	cases := []struct {
		name string
		dir  func(root string) string
	}{
		{"pod dir", func(root string) string { return filepath.Join(root, "pods", stagedUID) }},
		{"staging sha dir", func(root string) string { return filepath.Dir(stagingPath(root, refDriverName, semHandle)) }},
		{"block volume dir", func(root string) string { return root + "/plugins/kubernetes.io/csi/volumeDevices/pv-raw" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := fltWork(t)
			root := filepath.Join(work, "root")
			theirs := tc.dir(root)
			writeFile(t, theirs, "theirs.txt", "someone else's\n")
			before := sfTree(root)
			drv := fltStartRef(t, work)
			manifest := sample(t, "staged")
			if strings.Contains(tc.name, "block") {
				manifest = sample(t, "block")
			}
			r := runSim(t, "run", "-f", manifest, "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
				"--node-name", simNode, "-o", "json")
			wantCode(t, r, 3)
			oneLineError(t, r, theirs, "someone else")
			lines := parseTrace(t, r)
			for _, c := range calls(lines) {
				if c.Method == "NodeStageVolume" || c.Method == "NodePublishVolume" {
					t.Errorf("%s was called although %s is in the way", c.Method, theirs)
				}
			}
			if after := sfTree(root); !slices.Equal(after, before) {
				t.Errorf("the root dir changed:\n before %q\n after  %q", before, after)
			}
			if ms := mountsUnder(root); len(ms) > 0 {
				t.Errorf("mounted under the root dir: %v", ms)
			}
			lb := fmxLeftBehind(t, lines)
			if !lb.Clean || lb.Journal != "" {
				t.Errorf("left_behind %+v: the run made nothing that stays", lb)
			}
		})
	}
}

// TestSafetyNoDataLoss: the driver's NodeUnpublishVolume fails, so the
// volume stays published. What the pod wrote into it (a file and a
// subdirectory) is intact after the run, the target still mounted; the
// run exits 1 naming `cleanup`, and the summary (text and JSON) puts the
// kept volume down as the simulator's, never "nothing". With a healthy
// driver, `cleanup` unpublishes and unstages, the data stays in the
// driver's volume, and nothing of the simulator's is left.
func TestSafetyNoDataLoss(t *testing.T) {
	for _, output := range []string{"json", "text"} {
		t.Run(output, func(t *testing.T) {
			t.Parallel()
			work := fltWork(t)
			root := filepath.Join(work, "root")
			drv := fltStartRef(t, work, "--fault", "NodeUnpublishVolume=Internal")
			sim := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--max-attempts", "1", "--hold", "1s", "--volume-stats-agg-period", "0", "-o", output)
			target := targetPath(root, stagedUID, semPV)
			waitMounted(t, target, 15*time.Second, sim.exited)
			// The pod writes its data.
			writeFile(t, target, "precious.txt", "the pod's data\n")
			writeFile(t, target, "sub/dir/more.txt", "more\n")
			r := sim.wait(t, 30*time.Second)

			wantCode(t, r, 1)
			oneLineError(t, r, "UnmountVolume.TearDown failed", "csi-kubelet-sim cleanup --root-dir "+root+" --endpoint unix://"+drv.Sock)
			if !isMountPoint(target) {
				t.Errorf("the target %s of the volume whose unpublish failed was unmounted", target)
			}
			for f, want := range map[string]string{"precious.txt": "the pod's data\n", "sub/dir/more.txt": "more\n"} {
				if got := readFile(filepath.Join(target, f)); got != want {
					t.Errorf("%s in the volume reads %q after the run, want %q", f, got, want)
				}
			}
			if output == "json" {
				lb := fmxLeftBehind(t, parseTrace(t, r))
				var owners []string
				for _, x := range lb.Left {
					owners = append(owners, x.Owner)
				}
				if lb.Clean || !slices.Contains(owners, "the simulator's") {
					t.Errorf("left_behind %+v, want the kept volume as the simulator's", lb)
				}
			} else {
				line := textLine(r.Stdout, "  left behind ")
				if line == "" || strings.Contains(line, "left behind nothing") || !strings.Contains(line, "(the simulator's: kept") {
					t.Errorf("text summary %q: want the kept volume, as the simulator's", line)
				}
			}

			drv.Stop()
			_ = os.Remove(drv.Sock)
			drv2 := startRefDriver(t, work)
			c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv2.Sock, "--node-name", simNode, "-o", "json")
			wantCode(t, c, 0)
			cl := calls(parseTrace(t, c))
			var teardown []string
			for _, x := range cl {
				if x.Method == "NodeUnpublishVolume" || x.Method == "NodeUnstageVolume" {
					teardown = append(teardown, x.Method+"="+x.Code)
				}
			}
			if strings.Join(teardown, ",") != "NodeUnpublishVolume=OK,NodeUnstageVolume=OK" {
				t.Errorf("cleanup teardown calls %v, want NodeUnpublishVolume then NodeUnstageVolume, both OK", teardown)
			}
			if left := simOwnLeft(root); len(left) > 0 {
				t.Errorf("after cleanup, left of the simulator's own: %v", left)
			}
			// The data lives on in the driver's volume.
			if got := readFile(filepath.Join(work, "refdata", semHandle, "precious.txt")); got != "the pod's data\n" {
				t.Errorf("precious.txt in the driver's volume reads %q after cleanup", got)
			}
		})
	}
}

// textLine returns the first line of out that starts with prefix.
func textLine(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
