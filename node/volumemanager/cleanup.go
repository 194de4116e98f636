package volumemanager

// cleanup.go follows pkg/kubelet/kubelet_volumes.go (cleanupOrphanedPodDirs)
// and reports what a run leaves behind.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/moby/sys/mountinfo"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// Owner says whose a thing left under the root dir is.
type Owner string

const (
	// OwnerDriver: a mount or file the driver made under a path the
	// simulator made for it.
	OwnerDriver Owner = "the driver's"
	// OwnerSimulator: the simulator's own, kept on purpose after a failed
	// teardown, for `cleanup`.
	OwnerSimulator Owner = "the simulator's"
)

// Leftover is one thing left under the root dir after a run.
type Leftover struct {
	Path  string
	What  string // "mount", "file", "directory", "volume"
	Owner Owner
	Why   string
}

func (l Leftover) String() string {
	return fmt.Sprintf("%s %s (%s: %s)", l.What, l.Path, l.Owner, l.Why)
}

// Leftovers is what remained under the root dir after the kubelet's
// teardown. Mounts are the driver's mounts at paths the simulator handed it,
// still there after the driver said it unpublished or unstaged them: the
// simulator unmounted them (a kubelet would leave them, and on a real node
// they leak). Left lists what stays on disk: the driver's files, mounts
// inside the simulator's directories, and the simulator's own volumes kept
// after a failed teardown. KubeletPaths are left by a real kubelet too (the
// per-driver plugin dir; globalmount of a driver that does not stage); the
// simulator removes them.
type Leftovers struct {
	Mounts       []string
	Left         []Leftover
	KubeletPaths []string
	Errors       []error
	// Journal is the run's journal when it was kept for `cleanup`.
	Journal string
	// Symlinks are the paths refused in the root dir's own dirs where the
	// run had to make, write or remove something: symlinks and mounts
	// (planted, or swapped in by a driver), files that are not the ones
	// the simulator made (a hard link): nothing was done through them.
	Symlinks []string
	// Refused are the same refusals, each as its error (SymlinkError,
	// MountError, ForeignFileError).
	Refused []error
}

// Clean tells whether the run left nothing behind.
func (l *Leftovers) Clean() bool {
	return len(l.Mounts) == 0 && len(l.Left) == 0 && len(l.Errors) == 0
}

// NothingOnDisk tells whether nothing of the run is left on disk: what
// the driver left mounted at a path the simulator handed it was unmounted
// (and is reported in Mounts), and nothing else remains. Then there is
// nothing for `cleanup` to finish, so the journal and the root dir the run
// made go, and a later run is not refused.
func (l *Leftovers) NothingOnDisk() bool {
	return len(l.Left) == 0 && len(l.Errors) == 0
}

// KeptForCleanup tells whether volumes were left for `cleanup`.
func (l *Leftovers) KeptForCleanup() bool {
	return slices.ContainsFunc(l.Left, func(x Leftover) bool { return x.Owner == OwnerSimulator })
}

// DriverLeft tells whether the driver left mounts or files behind.
func (l *Leftovers) DriverLeft() bool {
	return len(l.Mounts) > 0 || slices.ContainsFunc(l.Left, func(x Leftover) bool { return x.Owner == OwnerDriver })
}

// Cleanup runs after teardown. It does the kubelet's housekeeping of
// orphaned pod directories and removes what the simulation created, and
// nothing else: directories one level at a time and only when empty,
// nothing inside a path that is or was a mount point, nothing of a volume
// kept after a failed teardown. With removeRoot, the root dir goes too
// when it is then empty.
func (k *VolumeManager) Cleanup(ctx context.Context, removeRoot bool) *Leftovers {
	ctx = csiclient.WithLabels(ctx, csiclient.Labels{Component: "simulator", Operation: "Cleanup"})
	l := &Leftovers{}
	k.checkMounts(ctx, l)
	k.cleanupOrphanedPodDirs(ctx)
	for _, p := range k.FS.KeptPaths() {
		if _, err := os.Lstat(p); err == nil {
			l.Left = append(l.Left, Leftover{Path: p, What: "volume", Owner: OwnerSimulator, Why: "kept as it is after its teardown failed; `csi-kubelet-sim cleanup` finishes it through the driver"})
		}
	}
	created := k.FS.Created()
	for i := len(created) - 1; i >= 0; i-- {
		k.removeCreated(ctx, created[i], l)
	}
	slices.Sort(l.KubeletPaths)
	k.FS.Finish(l.NothingOnDisk())
	if !l.NothingOnDisk() {
		l.Journal = k.FS.JournalPathOrKept()
	} else if j := k.FS.JournalPathOrKept(); j != "" {
		// Its removal was refused (a mount over the journal dir).
		l.Journal = j
	} else {
		k.RemoveEmptyCreated()
	}
	if removeRoot && l.NothingOnDisk() && l.Journal == "" {
		k.FS.ReleaseLock()
		rootdir.RemoveSimDir(k.Layout.Root)
		if err := os.Remove(k.Layout.Root); err != nil && !os.IsNotExist(err) {
			l.Errors = append(l.Errors, fmt.Errorf("remove root dir %s: %w", k.Layout.Root, err))
		}
	}
	l.Symlinks = k.FS.RefusedSymlinks()
	l.Refused = k.FS.Refusals()
	return l
}

// RemoveEmptyCreated removes the created directories that held only the
// journal: the root dir a run made, and its parents.
func (k *VolumeManager) RemoveEmptyCreated() {
	created := k.FS.Created()
	for i := len(created) - 1; i >= 0; i-- {
		_ = k.FS.RemovePath(created[i])
	}
}

// removeCreated removes one path the simulation created, after reporting
// what others put in it.
func (k *VolumeManager) removeCreated(ctx context.Context, p string, l *Leftovers) {
	if k.FS.IsKept(p) {
		return
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	if fi.IsDir() {
		// A directory of the run's with another mount on it, or on the
		// way to it, is not the run's any more: neither what is in it is
		// reported as the driver's, nor is anything removed (refused,
		// exit 2). A path handed to the driver is its mount point.
		at := p
		if k.FS.IsMountPath(p) {
			at = filepath.Dir(p)
		}
		if err := k.FS.CheckPath(at); rootdir.IsSymlinkRefused(err) {
			return
		}
		k.reportForeign(ctx, p, l)
	}
	if isKubeletKept(k.Layout, p) {
		l.KubeletPaths = append(l.KubeletPaths, p)
	}
	if err := k.FS.RemovePath(p); err != nil && !os.IsNotExist(err) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		l.Errors = append(l.Errors, fmt.Errorf("remove %s: %w", p, err))
	}
}

// checkMounts looks at every mount under the root dir once. A mount at a
// path the simulator handed the driver, after the driver said it was
// unpublished or unstaged, is the driver's leftover: unmounted, as the
// path is the simulator's. A mount elsewhere inside the simulator's
// directories is reported and left. Every other mount (another program's,
// the real kubelet's) is not looked at.
func (k *VolumeManager) checkMounts(ctx context.Context, l *Leftovers) {
	if k.rootMoved(ctx, l) {
		return
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(k.Layout.Root))
	if err != nil {
		l.Errors = append(l.Errors, fmt.Errorf("read mountinfo: %w", err))
		return
	}
	var points []string
	for _, m := range mounts {
		points = append(points, m.Mountpoint)
	}
	slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	points = slices.Compact(points)
	for _, p := range points {
		switch {
		case p == k.Layout.Root || k.FS.IsKept(p):
		case k.inFlightMount(ctx, p, l):
		case k.FS.IsMountPath(p):
			k.Trace.Warn(ctx, "left mounted by the driver after it answered OK: "+p+" (unmounting it: the simulator made this path for the driver)")
			if err := k.FS.UnmountAll(p); err != nil {
				l.Errors = append(l.Errors, err)
			}
			// Said unmounted only when mountinfo no longer has it: a mount
			// laid over a directory above it hides it from umount(2).
			if still, err := mountsAtOrUnder(p); err != nil || slices.Contains(still, p) {
				k.Trace.Warn(ctx, "still mounted after the simulator's unmount: "+p+" (another mount lies over the way to it); left mounted")
				l.Left = append(l.Left, Leftover{Path: p, What: "mount", Owner: OwnerDriver, Why: "left after the driver answered OK, and still in mountinfo after the simulator's unmount (another mount lies over the way to it)"})
				continue
			}
			l.Mounts = append(l.Mounts, p)
			k.FS.RemoveEmptyMountPath(p)
		case k.insideOwned(p):
			k.Trace.Warn(ctx, "a mount the driver made inside the simulator's directories, not at a path it was given: "+p+" (left mounted)")
			l.Left = append(l.Left, Leftover{Path: p, What: "mount", Owner: OwnerDriver, Why: "not at a path the simulator handed out, so left mounted"})
		}
	}
}

// rootMoved reports a root dir that is no longer at its path: moved
// (renamed) during the run, its descriptor, held since the run began,
// says where it is now. The teardown's calls named the old paths; what is
// mounted under the new one is reported from mountinfo, and left: the
// simulator acts only at the paths it handed out.
func (k *VolumeManager) rootMoved(ctx context.Context, l *Leftovers) bool {
	now := k.FS.RootNow()
	if now == "" || now == filepath.Clean(k.Layout.Root) {
		return false
	}
	mounts, err := mountsAtOrUnder(now)
	if err != nil {
		l.Errors = append(l.Errors, err)
	}
	l.Errors = append(l.Errors, fmt.Errorf("root dir %s was moved to %s during the run; nothing was checked or removed there (%d mounts under it)", k.Layout.Root, now, len(mounts)))
	k.Trace.Warn(ctx, fmt.Sprintf("the root dir %s was moved to %s during the run: what is mounted there is left", k.Layout.Root, now))
	for _, m := range mounts {
		l.Left = append(l.Left, Leftover{Path: m, What: "mount", Owner: OwnerDriver, Why: "under the root dir, moved during the run; left mounted"})
	}
	return true
}

// inFlightMount reports a mount at a path whose driver call an earlier
// run announced and never saw answered (it was killed meanwhile): the
// driver may still be in that call, or finish it after `cleanup` asked it
// to undo it. The mount is the driver's to undo, never the simulator's:
// unmounting it under a driver that is mid-call leaks what the driver
// holds (its loop devices). It is left, and a later `cleanup` asks the
// driver again.
func (k *VolumeManager) inFlightMount(ctx context.Context, p string, l *Leftovers) bool {
	op, ok := k.FS.CallInFlight(p)
	if !ok {
		return false
	}
	k.Trace.Warn(ctx, "still mounted: "+p+", where the killed run's "+op+" may still be running in the driver; left for the driver (run `cleanup` again once the driver is done)")
	l.Left = append(l.Left, Leftover{Path: p, What: "mount", Owner: OwnerDriver, Why: "the killed run's " + op + " there may still be in progress in the driver; `cleanup` again asks the driver to undo it"})
	return true
}

// insideOwned tells whether p lies inside a directory the simulator made.
func (k *VolumeManager) insideOwned(p string) bool {
	for d := filepath.Dir(p); len(d) > len(k.Layout.Root); d = filepath.Dir(d) {
		if k.FS.IsOwned(d) {
			return true
		}
	}
	return false
}

// reportForeign reports what is inside a directory the simulation created
// but was not created by it: the driver's files. They are left in place:
// the simulator deletes only what it made.
func (k *VolumeManager) reportForeign(ctx context.Context, dir string, l *Leftovers) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if k.FS.IsOwned(p) || k.FS.IsKept(p) || (dir == k.Layout.Root && e.Name() == rootdir.JournalDir) {
			continue
		}
		if mnt, _ := rootdir.IsMountPoint(p); mnt {
			continue // reported by checkMounts
		}
		what := "file"
		if e.IsDir() {
			what = "directory"
		}
		k.Trace.Warn(ctx, fmt.Sprintf("left behind by the driver: %s (left in place: the simulator deletes only what it made)", p))
		l.Left = append(l.Left, Leftover{Path: p, What: what, Owner: OwnerDriver, Why: "left in a directory the simulator made; not deleted"})
	}
}

// cleanupOrphanedPodDirs is the kubelet's housekeeping of deleted pods
// (cleanupOrphanedPodDirs in kubelet_volumes.go): a pod directory with no
// volume path left in it is removed. Only pods of this run are touched.
func (k *VolumeManager) cleanupOrphanedPodDirs(ctx context.Context) {
	for _, uid := range k.State.PodDirUIDs() {
		if k.State.PodHasMounts(uid) {
			continue
		}
		podDir := k.Layout.PodDir(uid)
		if k.FS.IsKept(podDir) {
			continue
		}
		volumes := filepath.Join(podDir, "volumes")
		csiDir := filepath.Join(volumes, rootdir.EscapeQualifiedName(rootdir.PluginName))
		if vols, _ := os.ReadDir(csiDir); len(vols) > 0 {
			k.Trace.Warn(ctx, fmt.Sprintf("orphaned pod %q found, but volume paths are still present on disk", uid))
			continue
		}
		devices := filepath.Join(podDir, "volumeDevices")
		removed := true
		for _, d := range []string{csiDir, volumes, filepath.Join(devices, rootdir.EscapeQualifiedName(rootdir.PluginName)), devices, filepath.Join(podDir, "plugins"), podDir} {
			if !k.FS.IsOwned(d) {
				continue
			}
			if err := k.FS.RemoveAt(d, true); err != nil && !os.IsNotExist(err) {
				k.Trace.Warn(ctx, fmt.Sprintf("housekeeping: %v", err))
				removed = false
				break
			}
		}
		if removed {
			k.Trace.Note(ctx, true, "housekeeping: removed orphaned pod dir "+podDir)
		}
	}
}

// isKubeletKept tells whether the kubelet itself leaves this path behind
// after a full teardown: the per-driver plugin dir, and the globalmount of
// a volume whose driver does not stage.
func isKubeletKept(p rootdir.Paths, path string) bool {
	rel, err := filepath.Rel(p.PluginDir(), path)
	if err != nil || strings.HasPrefix(rel, "..") || rel == "." {
		return false
	}
	return true
}

// forced is `cleanup --force` after the driver refused to tear a volume
// down (NotFound: it no longer knows it; or any other answer): the paths
// the journal recorded for it are unmounted and removed by the simulator
// (forceRemove), each step said in the trace. It tells whether nothing of
// them is left; otherwise they are kept as without --force. A call the
// driver did not answer (no socket, no answer in time, an interrupt) is
// never forced: the driver may still be working on the volume.
func (k *VolumeManager) forced(ctx context.Context, err error, dirs []string) bool {
	if !k.force || ctx.Err() != nil {
		return false
	}
	if _, answered := csiclient.DriverStatus(err); !answered || csiclient.Classify(err) != csiclient.Answered {
		return false
	}
	ok := true
	for _, d := range dirs {
		if err := k.forceRemove(ctx, d); err != nil {
			k.Trace.Warn(ctx, "--force: "+err.Error()+"; kept")
			ok = false
		}
	}
	return ok
}

// forceRemove unmounts and removes dir and what is under it, the paths the
// journal recorded only: a mount is unmounted only at a path recorded as
// one (a target, a staging path), and mountinfo is read again to see it
// gone before anything under it is removed; a file or directory is removed
// only when the journal lists it as the simulator's or as a mount path,
// and a directory only when empty (rmdir). Anything else stops it: what
// is not the simulator's stays where it is.
func (k *VolumeManager) forceRemove(ctx context.Context, dir string) error {
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return nil
	}
	if !k.FS.IsOwned(dir) && !k.FS.IsMountPath(dir) {
		return fmt.Errorf("%s is not recorded in the journal", dir)
	}
	mounts, err := mountsAtOrUnder(dir)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if !k.FS.IsMountPath(m) {
			return fmt.Errorf("%s is a mount the journal did not record", m)
		}
		if err := k.FS.UnmountAll(m); err != nil {
			return err
		}
		if still, err := mountsAtOrUnder(m); err != nil || len(still) > 0 {
			return fmt.Errorf("%s is still mounted after umount", m)
		}
		k.Trace.Note(ctx, false, "--force: unmounted "+m+" (the journal recorded it as a mount path)")
	}
	if still, err := mountsAtOrUnder(dir); err != nil || len(still) > 0 {
		return fmt.Errorf("mounts under %s remain: %v", dir, still)
	}
	// Everything is checked before anything is removed: a foreign entry
	// keeps the whole volume dir as it is.
	if err := k.forceWalk(dir, func(string, bool) error { return nil }); err != nil {
		return err
	}
	return k.forceWalk(dir, func(p string, isDir bool) error {
		if err := k.FS.RemoveAt(p, isDir); err != nil {
			return err
		}
		k.Trace.Note(ctx, false, "--force: removed "+p)
		return nil
	})
}

// forceWalk calls do for dir's entries depth first, then for dir, after
// checking that each is recorded in the journal; mountinfo shows nothing
// mounted at or under dir.
func (k *VolumeManager) forceWalk(dir string, do func(p string, isDir bool) error) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !k.FS.IsOwned(dir) && !k.FS.IsMountPath(dir) {
		return fmt.Errorf("%s is not recorded in the journal", dir)
	}
	if fi.IsDir() {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := k.forceWalk(filepath.Join(dir, e.Name()), do); err != nil {
				return err
			}
		}
	}
	return do(dir, fi.IsDir())
}

// mountsAtOrUnder are the mount points at dir or below it in mountinfo,
// deepest first.
func mountsAtOrUnder(dir string) ([]string, error) {
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(out), nil
}
