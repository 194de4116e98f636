package csi

// fsgroup.go follows pkg/volume/volume_linux.go SetVolumeOwnership.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// Permission bits of pkg/volume/volume_linux.go.
const (
	rwMask   = 0o660
	roMask   = 0o440
	execMask = 0o110
)

// OwnershipChange reports what the kubelet's fsGroup walk did.
type OwnershipChange struct {
	Skipped bool // OnRootMismatch and the root already fit
	Changed int  // entries whose group or mode changed
	Visited int
}

// ChangeOwnership is VolumeOwnership.ChangePermissions
// (pkg/volume/volume_linux.go): unless OnRootMismatch finds the root
// already right, a post-order walk that sets every entry's group to fsGroup
// and adds rw (files) or rwx and setgid (directories) for the group.
// Per-entry errors are only counted, as the kubelet only logs them.
func ChangeOwnership(dir string, fsGroup int64, policy *corev1.PodFSGroupChangePolicy, readOnly bool) (OwnershipChange, error) {
	var res OwnershipChange
	if policy != nil && *policy == corev1.FSGroupChangeOnRootMismatch && !RequiresPermissionChange(dir, fsGroup, readOnly) {
		res.Skipped = true
		return res, nil
	}
	err := WalkDeep(dir, func(p string, info fs.FileInfo) {
		res.Visited++
		if changeEntry(p, info, fsGroup, readOnly) {
			res.Changed++
		}
	})
	return res, err
}

// RequiresPermissionChange is the OnRootMismatch test on the root only.
func RequiresPermissionChange(root string, fsGroup int64, readOnly bool) bool {
	fi, err := os.Stat(root)
	if err != nil {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int64(st.Gid) != fsGroup || !fi.IsDir() {
		return true
	}
	perms := os.FileMode(rwMask)
	if readOnly {
		perms = roMask
	}
	perms |= execMask
	return fi.Mode().Perm()&perms != perms || fi.Mode()&os.ModeSetgid == 0
}

// WalkDeep visits children before their directory, without following
// symlinks and without stopping at filesystem boundaries.
func WalkDeep(root string, fn func(string, fs.FileInfo)) error {
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	if info.IsDir() {
		entries, err := os.ReadDir(root)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := WalkDeep(filepath.Join(root, e.Name()), fn); err != nil {
				return err
			}
		}
	}
	fn(root, info)
	return nil
}

// changeEntry is changeFilePermission: Lchown to the group, then chmod
// (never through a symlink).
func changeEntry(p string, info fs.FileInfo, fsGroup int64, readOnly bool) bool {
	st, _ := info.Sys().(*syscall.Stat_t)
	changed := st == nil || int64(st.Gid) != fsGroup
	if err := os.Lchown(p, -1, int(fsGroup)); err != nil {
		return false
	}
	if info.Mode()&os.ModeSymlink != 0 {
		return changed
	}
	mask := os.FileMode(rwMask)
	if readOnly {
		mask = roMask
	}
	if info.IsDir() {
		mask |= execMask | os.ModeSetgid
	}
	mode := info.Mode() | mask
	if mode != info.Mode() {
		changed = true
	}
	if err := os.Chmod(p, mode); err != nil {
		return false
	}
	return changed
}

func (c OwnershipChange) String() string {
	if c.Skipped {
		return "fsGroupChangePolicy OnRootMismatch: the root already has the group and permissions; nothing changed"
	}
	return fmt.Sprintf("%d of %d entries changed", c.Changed, c.Visited)
}
