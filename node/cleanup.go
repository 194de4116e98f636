package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// Leftovers is what remained under the root dir after the kubelet's
// teardown. Mounts and DriverPaths are the driver's fault: a kubelet would
// leave them too, and on a real node they leak. KubeletPaths are left by
// the kubelet itself (it never removes <root>/plugins/kubernetes.io/csi/<driver>,
// nor globalmount for drivers that do not stage). The simulator removes all
// of them before it exits.
type Leftovers struct {
	Mounts       []string
	DriverPaths  []string
	KubeletPaths []string
	Errors       []error
}

// Clean tells whether the driver left nothing behind.
func (l *Leftovers) Clean() bool {
	return len(l.Mounts) == 0 && len(l.DriverPaths) == 0 && len(l.Errors) == 0
}

// Cleanup runs after teardown. It does the kubelet's housekeeping of
// orphaned pod directories, reports and undoes what is left, and removes
// every directory and file the simulation created; with removeRoot, the
// root dir too.
func (k *Kubelet) Cleanup(ctx context.Context, removeRoot bool) *Leftovers {
	ctx = csiclient.WithLabels(ctx, csiclient.Labels{Component: "simulator", Operation: "Cleanup"})
	l := &Leftovers{}
	l.Mounts = k.unmountLeftovers(ctx, l)
	k.cleanupOrphanedPodDirs(ctx)

	created := k.fs.Created()
	isCreated := map[string]bool{}
	for _, p := range created {
		isCreated[p] = true
	}
	for i := len(created) - 1; i >= 0; i-- {
		p := created[i]
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			k.removeForeign(ctx, p, isCreated, l)
		}
		if isKubeletKept(k.paths, p) {
			l.KubeletPaths = append(l.KubeletPaths, p)
		}
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			l.Errors = append(l.Errors, fmt.Errorf("remove %s: %w", p, err))
		}
	}
	if removeRoot {
		if err := os.Remove(k.paths.Root); err != nil && !os.IsNotExist(err) {
			l.Errors = append(l.Errors, fmt.Errorf("remove root dir %s: %w", k.paths.Root, err))
		}
	}
	slices.Sort(l.KubeletPaths)
	return l
}

// unmountLeftovers finds mount points under the root dir and detaches them,
// deepest first.
func (k *Kubelet) unmountLeftovers(ctx context.Context, l *Leftovers) []string {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(k.paths.Root))
	if err != nil {
		l.Errors = append(l.Errors, fmt.Errorf("read mountinfo: %w", err))
		return nil
	}
	var points []string
	for _, m := range mounts {
		if m.Mountpoint != k.paths.Root {
			points = append(points, m.Mountpoint)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	points = slices.Compact(points)
	for _, p := range points {
		k.trace.Warn(ctx, "left mounted after teardown: "+p+" (unmounting it)")
		for range 16 {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				if !errors.Is(err, unix.EINVAL) {
					l.Errors = append(l.Errors, fmt.Errorf("unmount %s: %w", p, err))
				}
				break
			}
		}
	}
	return points
}

// removeForeign removes what is inside a directory the simulation created
// but was not created by it: files the driver left.
func (k *Kubelet) removeForeign(ctx context.Context, dir string, isCreated map[string]bool, l *Leftovers) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if isCreated[p] {
			continue
		}
		l.DriverPaths = append(l.DriverPaths, p)
		k.trace.Warn(ctx, "left behind by the driver: "+p+" (removing it)")
		if err := os.RemoveAll(p); err != nil {
			l.Errors = append(l.Errors, fmt.Errorf("remove %s: %w", p, err))
		}
	}
}

// cleanupOrphanedPodDirs is the kubelet's housekeeping of deleted pods
// (cleanupOrphanedPodDirs in kubelet_volumes.go): a pod directory with no
// volume path left in it is removed. Only pods of this run are touched.
func (k *Kubelet) cleanupOrphanedPodDirs(ctx context.Context) {
	for _, uid := range sortedKeys(k.podDirs) {
		if k.podHasMounts(uid) {
			continue
		}
		podDir := k.paths.PodDir(uid)
		volumes := filepath.Join(podDir, "volumes")
		csiDir := filepath.Join(volumes, escapeQualifiedName(pluginName))
		if vols, _ := os.ReadDir(csiDir); len(vols) > 0 {
			k.trace.Warn(ctx, fmt.Sprintf("orphaned pod %q found, but volume paths are still present on disk", uid))
			continue
		}
		devices := filepath.Join(podDir, "volumeDevices")
		for _, d := range []string{csiDir, volumes, filepath.Join(devices, escapeQualifiedName(pluginName)), devices, filepath.Join(podDir, "plugins"), podDir} {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				k.trace.Warn(ctx, fmt.Sprintf("housekeeping: %v", err))
				break
			}
		}
		k.trace.Note(ctx, true, "housekeeping: removed orphaned pod dir "+podDir)
	}
}

func (k *Kubelet) podHasMounts(uid string) bool {
	for key := range k.mounts {
		if key.podUID == uid {
			return true
		}
	}
	return false
}

// isKubeletKept tells whether the kubelet itself leaves this path behind
// after a full teardown: the per-driver plugin dir, and the globalmount of
// a volume whose driver does not stage.
func isKubeletKept(p Paths, path string) bool {
	rel, err := filepath.Rel(p.PluginDir(), path)
	if err != nil || strings.HasPrefix(rel, "..") || rel == "." {
		return false
	}
	return true
}
