package session

// The kubelet root dir: refused when it is the system's, made, resolved
// to its real path and locked for the session; what a run left in it.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
)

// resolveRootDir turns the root dir into its real path, once, before
// anything is made in it: every path is then built on it (mountinfo shows
// mounts at real paths, so the "left behind" check sees what the driver
// left), and a symlink swapped in on the way later is not followed. The
// user is told when it differs from what was given.
func resolveRootDir(dir string, note func(string)) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", WithCode(ExitEnvironment, fmt.Errorf("--root-dir %s: %w", dir, err))
	}
	if real != dir {
		note(fmt.Sprintf("--root-dir %s is %s (through a symlink): the simulator works in %s, and the paths handed to the driver are there", dir, real, real))
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
func lockRootDir(root, command string, note func(string)) (*node.RootLock, error) {
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
		note(staleLockNote(root, l.Stale.String()))
	}
	return l, nil
}

// staleLockNote tells that the lock of root was taken over from a process
// that is gone.
func staleLockNote(root, owner string) string {
	return fmt.Sprintf("%s was locked by %s, which is gone (killed or crashed): lock taken over", root, owner)
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

// prepareRootDir makes the root dir. It returns the directories it
// created, root last, so that they can all be removed afterwards; none when
// the root dir existed.
func (o *CommonOptions) prepareRootDir() (created []string, err error) {
	if o.RootDir == "" {
		d, err := os.MkdirTemp("", "csi-kubelet-sim-")
		if err != nil {
			return nil, WithCode(ExitEnvironment, fmt.Errorf("root dir: %w", err))
		}
		o.RootDir = d
		if err := o.holdRootDir(); err != nil {
			removeDirs([]string{d})
			return nil, err
		}
		return []string{d}, nil
	}
	if err := checkRootDir(o.RootDir); err != nil {
		return nil, err
	}
	fi, err := os.Stat(o.RootDir)
	if err == nil {
		if !fi.IsDir() {
			return nil, WithCode(ExitEnvironment, fmt.Errorf("--root-dir %s: not a directory", o.RootDir))
		}
		return nil, o.holdRootDir()
	}
	if !os.IsNotExist(err) {
		return nil, WithCode(ExitEnvironment, fmt.Errorf("--root-dir: %w", err))
	}
	if err := o.insideHeldRoot(); err != nil {
		return nil, err
	}
	var missing []string
	for d := o.RootDir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append([]string{d}, missing...)
	}
	for _, d := range missing {
		if err := os.Mkdir(d, 0o750); err != nil {
			removeDirs(created)
			return nil, WithCode(ExitEnvironment, fmt.Errorf("--root-dir: %w", err))
		}
		created = append(created, d)
	}
	if err := o.holdRootDir(); err != nil {
		removeDirs(created)
		return nil, err
	}
	return created, nil
}

// insideHeldRoot refuses, before any directory is made, a root dir inside
// one a live simulator holds (a command that makes nothing there is let
// through).
func (o *CommonOptions) insideHeldRoot() error {
	if o.lockAs == "" {
		return nil
	}
	if held := node.HeldAbove(o.RootDir); len(held) > 0 {
		return WithCode(ExitEnvironment, fmt.Errorf("--root-dir %s lies inside another root dir: %w", o.RootDir, held[0]))
	}
	return nil
}

// holdRootDir resolves the existing root dir to its real path and, for a
// command that makes things there, takes its lock; then refuses an earlier
// run's journal.
func (o *CommonOptions) holdRootDir() error {
	note := o.tell().Note
	real, err := resolveRootDir(o.RootDir, note)
	if err != nil {
		return err
	}
	o.RootDir = real
	if o.lockAs == "" {
		if err := node.CheckRoot(o.RootDir); err != nil {
			return rootErr(err)
		}
		return nil
	}
	o.rootLock, err = lockRootDir(o.RootDir, o.lockAs, note)
	return err
}

// removeDirs removes directories made by prepareRootDir, deepest first;
// only empty ones go.
func removeDirs(dirs []string) {
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

// checkRootDir refuses the system's own directories as a root dir.
func checkRootDir(dir string) error {
	clean, err := filepath.Abs(dir)
	if err != nil {
		clean = filepath.Clean(dir)
	}
	if r, err := filepath.EvalSymlinks(clean); err == nil {
		clean = r
	}
	for _, s := range systemRoots {
		if clean == s {
			return WithCode(ExitUsage, fmt.Errorf("--root-dir %s: a system directory cannot be a kubelet root dir; use a directory of its own, such as /var/lib/kubelet or a new temp dir", dir))
		}
	}
	for _, s := range []string{"/proc", "/sys", "/dev"} {
		if strings.HasPrefix(clean, s+"/") {
			return WithCode(ExitUsage, fmt.Errorf("--root-dir %s: inside %s, which is the kernel's, not a place for volumes", dir, s))
		}
	}
	return nil
}
