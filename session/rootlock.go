package session

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
)

// resolveRootDir turns the root dir into its real path, once, before
// anything is made in it: every path is then built on it (mountinfo shows
// mounts at real paths, so the "left behind" check sees what the driver
// left), and a symlink swapped in on the way later is not followed. The
// user is told when it differs from what was given.
func resolveRootDir(dir string, warn io.Writer) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", WithCode(ExitEnvironment, fmt.Errorf("--root-dir %s: %w", dir, err))
	}
	if real != dir {
		fmt.Fprintf(warn, "note: --root-dir %s is %s (through a symlink): the simulator works in %s, and the paths handed to the driver are there\n", dir, real, real)
	}
	if err := checkRootDir(real); err != nil {
		return "", err
	}
	return real, nil
}

// lockRootDir takes the root dir's lock for command, before anything but
// the root dir itself is made there, and then refuses a root dir that holds
// an earlier run's journal. The lock is held until the run leaves
// nothing, or the process ends.
func lockRootDir(root, command string, warn io.Writer) (*node.RootLock, error) {
	if held := node.HeldAbove(root); len(held) > 0 {
		return nil, WithCode(ExitEnvironment, fmt.Errorf("--root-dir %s lies inside another root dir: %w", root, held[0]))
	}
	l, err := node.LockRoot(root, command)
	if err != nil {
		return nil, rootErr(err)
	}
	if err := node.CheckRoot(root); err != nil {
		l.Restore()
		return nil, rootErr(err)
	}
	// What the simulated sidecars of an earlier run left (a volume
	// created or attached, never deleted) is `cleanup`'s too.
	if err := sidecars.CheckRoot(root); err != nil {
		l.Restore()
		return nil, WithCode(ExitEnvironment, err)
	}
	if l.Stale != nil {
		fmt.Fprintf(warn, "note: %s was locked by %s, which is gone (killed or crashed): lock taken over\n", root, *l.Stale)
	}
	return l, nil
}

// rootErr gives a root dir's refusal its exit code: a symlink or a mount
// where the root's own dirs should be, or a lock file or journal that is
// not the simulator's (a FIFO, a hard link), is bad input (2); a root dir
// in use or holding an unfinished run is the environment (3).
func rootErr(err error) error {
	if node.IsSymlinkRefused(err) || node.IsForeignFile(err) {
		return WithCode(ExitUsage, err)
	}
	return WithCode(ExitEnvironment, err)
}

// heldRootsErr refuses a `cleanup` whose root dir is, holds, or lies in a
// root dir a live simulator process has locked.
func heldRootsErr(dir string) error {
	held := node.HeldRoots(dir)
	if len(held) == 0 {
		return nil
	}
	msg := held[0].Error()
	if len(held) > 1 {
		msg += fmt.Sprintf(" (and %d more root dirs in use under %s)", len(held)-1, dir)
	}
	return WithCode(ExitEnvironment, fmt.Errorf("cleanup --root-dir %s: %s", dir, msg))
}

// symlinkRefused is the first path of the run refused for a symlink, a
// mount or a foreign file (a hard link) in the root dir's own dirs, wherever it was met (mount, teardown,
// clean-up), with what the run left.
func (ss *session) symlinkRefused(out *node.Outcome) error {
	errs := []error{out.MountErr, out.FirstVolumeError()}
	for _, err := range errs {
		if err != nil && node.IsSymlinkRefused(err) {
			return err
		}
	}
	if out.Leftovers == nil || len(out.Leftovers.Symlinks) == 0 {
		return nil
	}
	err := error(&node.SymlinkError{Path: out.Leftovers.Symlinks[0]})
	if len(out.Leftovers.Refused) > 0 {
		err = out.Leftovers.Refused[0] // a mount or a foreign file, not a symlink
	}
	if !out.Leftovers.Clean() {
		err = fmt.Errorf("%w; left: %s%s", err, leftoverList(out.Leftovers), ss.cleanupHint(out))
	}
	return err
}
