package session

// The session's kubelet root dir: made when missing, then taken through
// session/rootdirs (refused, resolved, locked); what a run left in it.

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/rootdirs"
)

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
			rootdirs.Remove([]string{d})
			return nil, err
		}
		return []string{d}, nil
	}
	if err := rootdirs.Check(o.RootDir); err != nil {
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
			rootdirs.Remove(created)
			return nil, WithCode(ExitEnvironment, fmt.Errorf("--root-dir: %w", err))
		}
		created = append(created, d)
	}
	if err := o.holdRootDir(); err != nil {
		rootdirs.Remove(created)
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
	real, err := rootdirs.Resolve(o.RootDir, note)
	if err != nil {
		return err
	}
	o.RootDir = real
	if o.lockAs == "" {
		if err := node.CheckRoot(o.RootDir); err != nil {
			return rootdirs.Err(err)
		}
		return nil
	}
	o.rootLock, err = rootdirs.Lock(o.RootDir, o.lockAs, note)
	return err
}
