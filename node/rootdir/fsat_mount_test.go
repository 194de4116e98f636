package rootdir

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Issue 28: no walk from the root dir's descriptor crosses into another
// mount, and no file of the simulator's is written or removed through a
// hard link.

// inPrivateMounts runs fn on a thread of its own in a private mount
// namespace: the mounts fn makes are seen by that thread only and go
// with it (the thread is never given back to the runtime), so that
// nothing stays mounted whatever fn does. Without root it skips. The
// root dir's descriptor must be opened in there (a descriptor opened
// outside sees the other namespace's mounts): fn makes its fileSystem.
// fn reports with t.Errorf and returns, never t.Fatal.
func inPrivateMounts(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes real bind mounts")
	}
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err = unix.Unshare(unix.CLONE_NEWNS); err != nil {
			err = fmt.Errorf("unshare: %w", err)
			return
		}
		if err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			err = fmt.Errorf("make / private: %w", err)
			return
		}
		fn()
	}()
	if err := <-done; err != nil {
		t.Skipf("no private mount namespace: %v", err)
	}
}

// foreignTree makes a directory outside the root that looks like the
// simulator's: what a planted mount would show where its own dir was.
func foreignTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"mount", "globalmount", "data", "dev"} {
		must(t, os.Mkdir(filepath.Join(dir, d), 0o750))
	}
	for _, f := range []string{"vol_data.json", "data/vol_data.json", "dev/pod-uid", "mount/precious"} {
		must(t, os.WriteFile(filepath.Join(dir, f), []byte(`{"foreign":"`+f+`"}`), 0o600))
	}
	return dir
}

// treeOf lists every path under dir with its content, to compare.
func treeOf(dir string) []string {
	var out []string
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		switch {
		case err != nil:
			out = append(out, p+" error "+err.Error())
		case fi.IsDir():
			out = append(out, p+"/")
		default:
			b, _ := os.ReadFile(p)
			out = append(out, p+" "+string(b))
		}
		return nil
	})
	return out
}

// TestWalkRefusesMount: a foreign directory bind-mounted over each
// directory of a pod volume's path (the pod volume dir, the plugin dir,
// volumes/, the pod dir, pods/) makes every walk that crosses it refuse
// with a MountError naming the mounted directory, through openat2 and
// through the mount-ID fallback, and nothing inside the foreign directory
// is read as the simulator's, written or removed.
func TestWalkRefusesMount(t *testing.T) {
	levels := []string{
		"pods/u1/volumes/kubernetes.io~csi/pv-1",
		"pods/u1/volumes/kubernetes.io~csi",
		"pods/u1/volumes",
		"pods/u1",
		"pods",
	}
	planted := 0
	for _, fallback := range []bool{false, true} {
		for _, level := range levels {
			name := fmt.Sprintf("fallback=%v/%s", fallback, level)
			t.Run(name, func(t *testing.T) {
				root := t.TempDir()
				vol := filepath.Join(root, "pods/u1/volumes/kubernetes.io~csi/pv-1")
				must(t, os.MkdirAll(filepath.Join(vol, "mount"), 0o750))
				foreign := foreignTree(t)
				mirror := filepath.Join(foreign, strings.TrimPrefix(vol, filepath.Join(root, level)))
				must(t, os.MkdirAll(filepath.Join(mirror, "mount"), 0o750))
				must(t, os.WriteFile(filepath.Join(mirror, "vol_data.json"), []byte(`{"volumeHandle":"foreign"}`), 0o600))
				before := treeOf(foreign)
				inPrivateMounts(t, func() {
					noOpenat2.Store(fallback)
					defer noOpenat2.Store(false)
					f := NewFileSystem(root)
					for _, p := range []string{"pods", "pods/u1", "pods/u1/volumes", "pods/u1/volumes/kubernetes.io~csi", "pods/u1/volumes/kubernetes.io~csi/pv-1"} {
						f.RememberKind(filepath.Join(root, p), RecordDir)
					}
					if err := f.SaveVolumeData(vol, map[string]string{"volumeHandle": "h"}); err != nil {
						t.Errorf("save: %v", err)
						return
					}
					mounted := filepath.Join(root, level)
					if err := unix.Mount(foreign, mounted, "", unix.MS_BIND, ""); err != nil {
						t.Errorf("bind mount: %v", err)
						return
					}
					planted++
					if _, err := f.LoadVolumeData(vol); !IsMountRefused(err) || !strings.Contains(err.Error(), mounted+" is a mount point") {
						t.Errorf("loadVolumeData through the mount: %v, want a refusal naming %s", err, mounted)
					}
					for _, tc := range []struct {
						what string
						err  error
					}{
						{"remove vol_data.json", f.RemoveAt(filepath.Join(vol, VolDataFileName), false)},
						{"remove mount/", f.RemoveAt(filepath.Join(vol, "mount"), true)},
						{"remove the volume dir", f.RemoveAt(vol, true)},
						{"mkdir", f.MkdirAll(filepath.Join(vol, "new"), 0o750)},
						{"save vol_data.json", f.SaveVolumeData(vol, map[string]string{"volumeHandle": "h2"})},
						{"check the path", f.CheckPath(vol)},
					} {
						if !IsMountRefused(tc.err) {
							t.Errorf("%s through the mount: %v, want a mount refused", tc.what, tc.err)
						}
					}
					if r := f.Refusals(); len(r) == 0 || !IsMountRefused(r[0]) {
						t.Errorf("refusals %v, want the mount noted (exit code 2)", r)
					}
					if err := unix.Unmount(mounted, unix.MNT_DETACH); err != nil {
						t.Errorf("unmount: %v", err)
					}
					// Without the mount, the same walk goes on.
					if _, err := f.LoadVolumeData(vol); err != nil {
						t.Errorf("loadVolumeData once the mount is gone: %v", err)
					}
				})
				if after := treeOf(foreign); !slices.Equal(before, after) {
					t.Errorf("the foreign dir changed:\n before %q\n after  %q", before, after)
				}
			})
		}
	}
	t.Logf("%d planted mounts, each refused", planted)
}

// TestWalkMountPathIsLast: a path handed to the driver (a publish target)
// is mounted on by design: while mounted it is not removed (busy) and no
// refusal is noted; once unmounted it is removed.
func TestWalkMountPathIsLast(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "pods/u1/volumes/kubernetes.io~csi/pv-1/mount")
	must(t, os.MkdirAll(target, 0o750))
	f := NewFileSystem(root)
	f.MarkMountPath(target)
	backing := foreignTree(t)
	inPrivateMounts(t, func() {
		if err := unix.Mount(backing, target, "", unix.MS_BIND, ""); err != nil {
			t.Errorf("bind mount: %v", err)
			return
		}
		if err := f.RemoveAt(target, true); IsSymlinkRefused(err) || err == nil {
			t.Errorf("remove of the driver's mounted target: %v, want busy and no refusal", err)
		}
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount: %v", err)
		}
		if err := f.RemoveAt(target, true); err != nil {
			t.Errorf("remove once unmounted: %v", err)
		}
	})
	if r := f.Refusals(); len(r) > 0 {
		t.Errorf("refusals %v for the driver's own mount point", r)
	}
}

// TestJournalDirMountRefused: a foreign directory mounted over the
// journal dir, holding a file named as the run's journal: the journal's
// removal is refused and the foreign file stays.
func TestJournalDirMountRefused(t *testing.T) {
	root := t.TempDir()
	foreign := t.TempDir()
	must(t, os.WriteFile(filepath.Join(foreign, "sidecars-1-2.controller"), []byte("foreign\n"), 0o600))
	var name string
	inPrivateMounts(t, func() {
		j, err := openJournal(root, "run")
		if err != nil {
			t.Errorf("journal: %v", err)
			return
		}
		name = filepath.Base(j.Path)
		if err := os.WriteFile(filepath.Join(foreign, name), []byte("foreign\n"), 0o600); err != nil {
			t.Errorf("%v", err)
			return
		}
		mounted := filepath.Join(root, JournalDir)
		if err := unix.Mount(foreign, mounted, "", unix.MS_BIND, ""); err != nil {
			t.Errorf("bind mount: %v", err)
			return
		}
		defer func() { _ = unix.Unmount(mounted, unix.MNT_DETACH) }()
		if err := j.remove(); !IsMountRefused(err) {
			t.Errorf("journal removal under a mount: %v, want a mount refused", err)
		}
		if _, err := Journals(root); !IsMountRefused(err) {
			t.Errorf("Journals under a mount: %v, want a mount refused", err)
		}
		if err := RemoveInSimDir(root, "sidecars-1-2.controller", nil); !IsMountRefused(err) {
			t.Errorf("RemoveInSimDir under a mount: %v, want a mount refused", err)
		}
	})
	for _, n := range []string{name, "sidecars-1-2.controller"} {
		if n == "" {
			continue
		}
		if got := readFile(filepath.Join(foreign, n)); got != "foreign\n" {
			t.Errorf("foreign %s reads %q", n, got)
		}
	}
}

// TestVolDataHardLink: a hard link to a foreign file put at vol_data.json
// after the simulator wrote it is neither rewritten nor removed; one put
// there before it is made is not written either (O_EXCL).
func TestVolDataHardLink(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "v")
	f := NewFileSystem(root)
	must(t, f.MkdirAll(vol, 0o750))
	p := filepath.Join(vol, VolDataFileName)
	must(t, f.SaveVolumeData(vol, map[string]string{"volumeHandle": "h"}))
	foreign := filepath.Join(t.TempDir(), "precious")
	must(t, os.WriteFile(foreign, []byte("foreign data\n"), 0o600))
	must(t, os.Remove(p))
	must(t, os.Link(foreign, p))
	if err := f.SaveVolumeData(vol, map[string]string{"volumeHandle": "h2"}); !IsSymlinkRefused(err) || !strings.Contains(err.Error(), "hard link") {
		t.Errorf("rewrite through a hard link: %v, want refused", err)
	}
	if err := f.RemoveAt(p, false); !IsSymlinkRefused(err) {
		t.Errorf("remove of a hard link: %v, want refused", err)
	}
	// Another single-name file swapped in (another inode) is not its own either.
	must(t, os.Remove(p))
	must(t, os.WriteFile(p, []byte("someone's\n"), 0o600))
	if err := f.SaveVolumeData(vol, map[string]string{"volumeHandle": "h3"}); !IsSymlinkRefused(err) || !strings.Contains(err.Error(), "inode") {
		t.Errorf("rewrite of another inode: %v, want refused", err)
	}
	if got := readFile(p); got != "someone's\n" {
		t.Errorf("the swapped-in file reads %q", got)
	}
	// createAt never opens what is there.
	if _, err := f.CreateAt(p, 0o644); err == nil {
		t.Errorf("createAt over an existing file succeeded")
	}
	if got := readFile(foreign); got != "foreign data\n" {
		t.Errorf("the foreign file reads %q", got)
	}
	var st unix.Stat_t
	must(t, unix.Stat(foreign, &st))
	if st.Nlink != 1 {
		t.Errorf("the foreign file has %d links, want 1 (the planted one removed by the test)", st.Nlink)
	}
}

// TestWalkTakesNodeMount: a directory the simulator did not make that is
// a mount point before the command (pods/ on a disk of its own) is walked
// through; another mount over it later is refused.
func TestWalkTakesNodeMount(t *testing.T) {
	root := t.TempDir()
	pods := filepath.Join(root, "pods")
	must(t, os.Mkdir(pods, 0o750))
	disk, foreign := t.TempDir(), foreignTree(t)
	before := treeOf(foreign)
	inPrivateMounts(t, func() {
		if err := unix.Mount(disk, pods, "", unix.MS_BIND, ""); err != nil {
			t.Errorf("bind mount: %v", err)
			return
		}
		f := NewFileSystem(root)
		vol := filepath.Join(pods, "u1/volumes/kubernetes.io~csi/pv-1")
		if err := f.MkdirAll(vol, 0o750); err != nil {
			t.Errorf("mkdir through the node's own mount at pods/: %v", err)
			return
		}
		if err := f.CheckPath(vol); err != nil {
			t.Errorf("check through the node's own mount: %v", err)
		}
		if err := unix.Mount(foreign, pods, "", unix.MS_BIND, ""); err != nil {
			t.Errorf("bind mount: %v", err)
			return
		}
		if err := f.CheckPath(vol); !IsMountRefused(err) {
			t.Errorf("a mount over pods/ during the run: %v, want refused", err)
		}
		if err := f.RemoveAt(vol, true); !IsMountRefused(err) {
			t.Errorf("remove through a mount over pods/: %v, want refused", err)
		}
	})
	if after := treeOf(foreign); !slices.Equal(before, after) {
		t.Errorf("the foreign dir changed:\n before %q\n after  %q", before, after)
	}
}
