// Package rootdirs answers which kubelet root dir a session may use: not
// the system's own directories, not one inside another held; resolved to
// its real path; locked for the session (node.LockRoot), and refused when
// it holds an earlier run's journal or sidecar records; for `cleanup`,
// the root dirs under it that an interrupted run left (journals, sidecar
// records, a control plane's dir), each locked before any is touched.
package rootdirs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/controlplane"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
)

// Resolve turns the root dir into its real path, once, before
// anything is made in it: every path is then built on it (mountinfo shows
// mounts at real paths, so the "left behind" check sees what the driver
// left), and a symlink swapped in on the way later is not followed. The
// user is told when it differs from what was given.
func Resolve(dir string, note func(string)) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", exitcode.With(exitcode.Environment, fmt.Errorf("--root-dir %s: %w", dir, err))
	}
	if real != dir {
		note(fmt.Sprintf("--root-dir %s is %s (through a symlink): the simulator works in %s, and the paths handed to the driver are there", dir, real, real))
	}
	if err := Check(real); err != nil {
		return "", err
	}
	return real, nil
}

// Lock takes the root dir's lock for command, before anything but
// the root dir itself is made there, and then refuses a root dir that holds
// an earlier run's journal. The lock is held until the run leaves
// nothing, or the process ends.
func Lock(root, command string, note func(string)) (*node.RootLock, error) {
	if held := node.HeldAbove(root); len(held) > 0 {
		return nil, exitcode.With(exitcode.Environment, fmt.Errorf("--root-dir %s lies inside another root dir: %w", root, held[0]))
	}
	l, err := node.LockRoot(root, command)
	if err != nil {
		return nil, Err(err)
	}
	if err := node.CheckRoot(root); err != nil {
		l.Restore()
		return nil, Err(err)
	}
	// What the simulated sidecars of an earlier run left (a volume
	// created or attached, never deleted) is `cleanup`'s too.
	if err := sidecars.CheckRoot(root); err != nil {
		l.Restore()
		return nil, exitcode.With(exitcode.Environment, err)
	}
	if l.Stale != nil {
		note(staleLockNote(root, l.Stale.String()))
	}
	return l, nil
}

// staleLockNote tells that the lock of root was taken over from a process
// that is gone.
func staleLockNote(root, owner string) string {
	return fmt.Sprintf("%s was locked by %s, which is gone (killed or crashed): lock taken over", root, owner)
}

// Err gives a root dir's refusal its exit code: a symlink or a mount
// where the root's own dirs should be, or a lock file or journal that is
// not the simulator's (a FIFO, a hard link), is bad input (2); a root dir
// in use or holding an unfinished run is the environment (3).
func Err(err error) error {
	if node.IsSymlinkRefused(err) || node.IsForeignFile(err) {
		return exitcode.With(exitcode.Usage, err)
	}
	return exitcode.With(exitcode.Environment, err)
}

// heldErr refuses a `cleanup` whose root dir is, holds, or lies in a
// root dir a live simulator process has locked.
func heldErr(dir string) error {
	held := node.HeldRoots(dir)
	if len(held) == 0 {
		return nil
	}
	msg := held[0].Error()
	if len(held) > 1 {
		msg += fmt.Sprintf(" (and %d more root dirs in use under %s)", len(held)-1, dir)
	}
	return exitcode.With(exitcode.Environment, fmt.Errorf("cleanup --root-dir %s: %s", dir, msg))
}

// Remove removes the directories a session made for its root dir,
// deepest first; only empty ones go.
func Remove(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}

// systemRoots are directories a kubelet root dir can never be: the
// machine's own mount roots and system trees. A run makes directories and
// mounts in its root dir, so these are refused outright; an existing
// directory below them (/var/lib/kubelet) is fine, since a run touches only
// what it made there.
var systemRoots = []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/var/lib", "/var/run", "/var/tmp"}

// Check refuses the system's own directories as a root dir.
func Check(dir string) error {
	clean, err := filepath.Abs(dir)
	if err != nil {
		clean = filepath.Clean(dir)
	}
	if r, err := filepath.EvalSymlinks(clean); err == nil {
		clean = r
	}
	for _, s := range systemRoots {
		if clean == s {
			return exitcode.With(exitcode.Usage, fmt.Errorf("--root-dir %s: a system directory cannot be a kubelet root dir; use a directory of its own, such as /var/lib/kubelet or a new temp dir", dir))
		}
	}
	for _, s := range []string{"/proc", "/sys", "/dev"} {
		if strings.HasPrefix(clean, s+"/") {
			return exitcode.With(exitcode.Usage, fmt.Errorf("--root-dir %s: inside %s, which is the kernel's, not a place for volumes", dir, s))
		}
	}
	return nil
}

// LockForCleanup refuses a root dir a live process holds (the root dir,
// one above it, or one under it: a `conformance` run's scenarios, another
// run's root inside it), then takes the lock of the root dir and of every
// root dir under it that holds a journal, before any is touched. A
// journal whose writer still runs without a lock (an older release) is
// refused too.
func LockForCleanup(dir string, note func(string)) (map[string]*node.RootLock, []string, error) {
	if err := heldErr(dir); err != nil {
		return nil, nil, err
	}
	roots, err := journalRoots(dir)
	if err != nil {
		return nil, nil, Err(fmt.Errorf("--root-dir: %w", err))
	}
	slices.Sort(roots)
	locks := map[string]*node.RootLock{}
	release := func() {
		for _, l := range locks {
			l.Restore()
		}
	}
	for _, root := range append([]string{dir}, roots...) {
		if locks[root] != nil {
			continue
		}
		l, err := node.LockRoot(root, "cleanup")
		if err != nil {
			release()
			return nil, nil, Err(fmt.Errorf("cleanup --root-dir %s: %w", dir, err))
		}
		locks[root] = l
		if l.Stale != nil {
			note(staleLockNote(root, l.Stale.String()))
		}
		js, _ := node.Journals(root)
		if owner, live := node.LiveJournalOwner(js); live {
			release()
			return nil, nil, exitcode.With(exitcode.Environment, fmt.Errorf("cleanup --root-dir %s: %w", dir, &node.RootHeldError{Root: root, Owner: owner}))
		}
	}
	return locks, roots, nil
}

// journalRoots are the root dirs under dir that hold a journal: dir
// itself, and the per-scenario roots of an interrupted `conformance`.
func journalRoots(dir string) ([]string, error) {
	var roots []string
	for _, d := range append([]string{dir}, subdirs(dir)...) {
		js, err := node.Journals(d)
		if err != nil {
			return nil, err
		}
		if len(js) > 0 || sidecars.HasRecords(d) || controlplane.HasLeftover(d) {
			roots = append(roots, d)
		}
	}
	return roots, nil
}

func subdirs(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
