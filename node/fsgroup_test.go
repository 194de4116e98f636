package node

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// testGID is the fsGroup the tests apply: no group the test files start with.
const testGID = 4242

// needChown skips a test that changes a file's group to testGID, which
// only root may do.
func needChown(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to another group needs root")
	}
}

// volumeTree makes, under a fresh directory, what a volume holds: a file,
// a subdirectory with a file, and a symlink; modes as given, umask aside.
func volumeTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "vol")
	for _, step := range []error{
		os.Mkdir(root, 0o755),
		os.WriteFile(filepath.Join(root, "a"), nil, 0o600),
		os.Mkdir(filepath.Join(root, "sub"), 0o700),
		os.WriteFile(filepath.Join(root, "sub", "b"), nil, 0o644),
		os.Symlink("a", filepath.Join(root, "link")),
	} {
		must(t, step)
	}
	for p, mode := range map[string]os.FileMode{root: 0o755, "a": 0o600, "sub": 0o700, "sub/b": 0o644} {
		if p != root {
			p = filepath.Join(root, p)
		}
		must(t, os.Chmod(p, mode))
	}
	return root
}

// modes returns each entry's "gid mode" (symlinks: "gid symlink"); setgid
// shows as a leading g.
func modes(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		gid := fi.Sys().(*syscall.Stat_t).Gid
		if fi.Mode()&os.ModeSymlink != 0 {
			out[rel] = fmt.Sprintf("%d symlink", gid)
		} else {
			out[rel] = fmt.Sprintf("%d %v", gid, fi.Mode()&(os.ModePerm|os.ModeSetgid))
		}
		return nil
	})
	must(t, err)
	return out
}

// docs/kubelet.md §7.3: VolumeOwnership.ChangePermissions. Every entry gets the
// group; files gain rw (r with readOnly) for the group, directories also x
// and setgid; a symlink gets the group but no chmod (its target is not
// changed through it).
func TestChangeOwnership(t *testing.T) {
	needChown(t)
	onRootMismatch := corev1.FSGroupChangeOnRootMismatch
	always := corev1.FSGroupChangeAlways
	tests := []struct {
		name     string
		policy   *corev1.PodFSGroupChangePolicy
		readOnly bool
		want     map[string]string
		wantRes  csiplugin.OwnershipChange
	}{
		{"no policy (Always)", nil, false, map[string]string{
			".": "4242 grwxrwxr-x", "a": "4242 -rw-rw----", "sub": "4242 grwxrwx---", "sub/b": "4242 -rw-rw-r--", "link": "4242 symlink",
		}, csiplugin.OwnershipChange{Changed: 5, Visited: 5}},
		{"Always", &always, false, map[string]string{
			".": "4242 grwxrwxr-x", "a": "4242 -rw-rw----", "sub": "4242 grwxrwx---", "sub/b": "4242 -rw-rw-r--", "link": "4242 symlink",
		}, csiplugin.OwnershipChange{Changed: 5, Visited: 5}},
		{"read-only", nil, true, map[string]string{
			".": "4242 grwxr-xr-x", "a": "4242 -rw-r-----", "sub": "4242 grwxr-x---", "sub/b": "4242 -rw-r--r--", "link": "4242 symlink",
		}, csiplugin.OwnershipChange{Changed: 5, Visited: 5}},
		{"OnRootMismatch, root not right: the whole walk", &onRootMismatch, false, map[string]string{
			".": "4242 grwxrwxr-x", "a": "4242 -rw-rw----", "sub": "4242 grwxrwx---", "sub/b": "4242 -rw-rw-r--", "link": "4242 symlink",
		}, csiplugin.OwnershipChange{Changed: 5, Visited: 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := volumeTree(t)
			res, err := csiplugin.ChangeOwnership(root, testGID, tc.policy, tc.readOnly)
			if err != nil {
				t.Fatal(err)
			}
			if res != tc.wantRes {
				t.Errorf("result %+v, want %+v", res, tc.wantRes)
			}
			if got := modes(t, root); !maps.Equal(got, tc.want) {
				t.Errorf("after the walk:\n got %v\nwant %v", got, tc.want)
			}
			// A second walk finds nothing to change.
			if res, _ := csiplugin.ChangeOwnership(root, testGID, tc.policy, tc.readOnly); res.Changed != 0 && tc.policy == nil {
				t.Errorf("second walk changed %d entries", res.Changed)
			}
		})
	}
}

// OnRootMismatch with the root already right skips the walk: a file with
// another group stays as it is.
func TestChangeOwnershipOnRootMismatchSkips(t *testing.T) {
	needChown(t)
	root := volumeTree(t)
	must(t, os.Chown(root, -1, testGID))
	must(t, os.Chmod(root, 0o770|os.ModeSetgid))
	policy := corev1.FSGroupChangeOnRootMismatch
	res, err := csiplugin.ChangeOwnership(root, testGID, &policy, false)
	if err != nil || !res.Skipped || res.Visited != 0 {
		t.Errorf("result %+v, %v; want skipped", res, err)
	}
	if got := modes(t, root)["a"]; got == "4242 -rw-rw----" {
		t.Errorf("a changed to %s by a skipped walk", got)
	}
	const want = "fsGroupChangePolicy OnRootMismatch: the root already has the group and permissions; nothing changed"
	if res.String() != want {
		t.Errorf("String = %q, want %q", res, want)
	}
	if s := (csiplugin.OwnershipChange{Changed: 3, Visited: 5}).String(); s != "3 of 5 entries changed" {
		t.Errorf("String = %q", s)
	}
}

// requiresPermissionChange looks at the root only: its group, rw (r when
// read-only) and x for the group, and setgid.
func TestRequiresPermissionChange(t *testing.T) {
	needChown(t)
	tests := []struct {
		name     string
		mode     os.FileMode
		gid      int
		file     bool
		readOnly bool
		want     bool
	}{
		{"right", 0o770 | os.ModeSetgid, testGID, false, false, false},
		{"right, more bits", 0o775 | os.ModeSetgid, testGID, false, false, false},
		{"other group", 0o770 | os.ModeSetgid, 0, false, false, true},
		{"no setgid", 0o770, testGID, false, false, true},
		{"no group write", 0o750 | os.ModeSetgid, testGID, false, false, true},
		{"no group write, read-only", 0o750 | os.ModeSetgid, testGID, false, true, false},
		{"no group x, read-only", 0o740 | os.ModeSetgid, testGID, false, true, true},
		{"a file", 0o770, testGID, true, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "root")
			if tc.file {
				must(t, os.WriteFile(p, nil, 0o600))
			} else {
				must(t, os.Mkdir(p, 0o700))
			}
			must(t, os.Chown(p, -1, tc.gid))
			must(t, os.Chmod(p, tc.mode))
			if got := csiplugin.RequiresPermissionChange(p, testGID, tc.readOnly); got != tc.want {
				t.Errorf("requiresPermissionChange = %t, want %t", got, tc.want)
			}
		})
	}
	if !csiplugin.RequiresPermissionChange(filepath.Join(t.TempDir(), "missing"), testGID, false) {
		t.Errorf("a missing root needs no change")
	}
}

// The walk is post-order (children first), does not follow symlinks, and
// fails on a missing root.
func TestWalkDeep(t *testing.T) {
	root := volumeTree(t)
	must(t, os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "sub-link")))
	var got []string
	must(t, csiplugin.WalkDeep(root, func(p string, _ fs.FileInfo) {
		rel, _ := filepath.Rel(root, p)
		got = append(got, rel)
	}))
	want := []string{"a", "link", "sub/b", "sub", "sub-link", "."}
	if !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	if err := csiplugin.WalkDeep(filepath.Join(root, "missing"), func(string, fs.FileInfo) {}); err == nil {
		t.Errorf("missing root: no error")
	}
}

// docs/kubelet.md §7.2: csiMountMgr.supportsFSGroup, the policy by policy table.
func TestSupportsFSGroup(t *testing.T) {
	gid := int64(testGID)
	pv := func(modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{AccessModes: modes}}
	}
	tests := []struct {
		name    string
		v       csiplugin.VolumeSpec
		fsGroup *int64
		policy  storagev1.FSGroupPolicy
		want    bool
	}{
		{"no fsGroup", csiplugin.VolumeSpec{FSType: "ext4", PV: pv(corev1.ReadWriteOnce)}, nil, storagev1.FileFSGroupPolicy, false},
		{"policy None", csiplugin.VolumeSpec{FSType: "ext4", PV: pv(corev1.ReadWriteOnce)}, &gid, storagev1.NoneFSGroupPolicy, false},
		{"read-only", csiplugin.VolumeSpec{FSType: "ext4", ReadOnly: true, PV: pv(corev1.ReadWriteOnce)}, &gid, storagev1.FileFSGroupPolicy, false},
		{"File: always", csiplugin.VolumeSpec{PV: pv(corev1.ReadWriteMany)}, &gid, storagev1.FileFSGroupPolicy, true},
		{"WithFSType, no fsType", csiplugin.VolumeSpec{PV: pv(corev1.ReadWriteOnce)}, &gid, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, false},
		{"WithFSType, RWO", csiplugin.VolumeSpec{FSType: "ext4", PV: pv(corev1.ReadWriteOnce)}, &gid, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, true},
		{"WithFSType, RWOP among others", csiplugin.VolumeSpec{FSType: "ext4", PV: pv(corev1.ReadOnlyMany, corev1.ReadWriteOncePod)}, &gid, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, true},
		{"WithFSType, RWX only", csiplugin.VolumeSpec{FSType: "ext4", PV: pv(corev1.ReadWriteMany)}, &gid, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, false},
		{"WithFSType, no access modes", csiplugin.VolumeSpec{FSType: "ext4", PV: pv()}, &gid, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, false},
		{"WithFSType, inline with fsType", csiplugin.VolumeSpec{FSType: "ext4"}, &gid, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := csiplugin.SupportsFSGroup(&tc.v, tc.fsGroup, tc.policy); got != tc.want {
				t.Errorf("supportsFSGroup = %t, want %t", got, tc.want)
			}
		})
	}
	if p := csiplugin.FSGroupPolicy(nil, false); p != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy {
		t.Errorf("policy without a CSIDriver = %s", p)
	}
}

// After a publish the kubelet walks the target (the fake makes it, mounts
// nothing) unless the driver takes the fsGroup (VOLUME_MOUNT_GROUP); with
// DryRun it only says what it would do.
func TestApplyFSGroup(t *testing.T) {
	needChown(t)
	pod := `apiVersion: v1
kind: Pod
metadata: {name: app-1, namespace: default, uid: pod-uid-1}
spec:
  securityContext: {fsGroup: 4242}
  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [` + claimVol("data", "data-1") + `]`
	tests := []struct {
		name     string
		policy   string
		caps     []csi.NodeServiceCapability_RPC_Type
		dryRun   bool
		wantNote string // "" : no fsGroup step at all
		wantGID  uint32
	}{
		{"File", "File", []csi.NodeServiceCapability_RPC_Type{capStage}, false, "fsGroup 4242 (fsGroupPolicy File): 1 of 1 entries changed", 4242},
		{"File, dry run", "File", []csi.NodeServiceCapability_RPC_Type{capStage}, true, "fsGroup 4242: the kubelet would now set the group of every file on the volume (fsGroupPolicy File)", 0},
		{"File, VOLUME_MOUNT_GROUP: the driver's job", "File", []csi.NodeServiceCapability_RPC_Type{capStage, capVMG}, false, "", 0},
		{"None", "None", []csi.NodeServiceCapability_RPC_Type{capStage}, false, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := []envOption{}
			if tc.dryRun {
				opts = append(opts, dryRun)
			}
			e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "fsGroupPolicy: "+tc.policy), pv1, pvc1, pod), newFakeDriver(tc.caps...), opts...)
			e.mountOK("app-1")
			var notes []string
			for _, s := range e.steps(false) {
				if len(s) > 8 && s[:8] == "fsGroup " {
					notes = append(notes, s)
				}
			}
			switch {
			case tc.wantNote == "" && len(notes) != 0:
				t.Errorf("fsGroup steps %q, want none", notes)
			case tc.wantNote != "" && !slices.Equal(notes, []string{tc.wantNote}):
				t.Errorf("fsGroup steps %q, want %q", notes, tc.wantNote)
			}
			fi, err := os.Stat(targetPV1(e.root))
			if err != nil {
				t.Fatal(err)
			}
			if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != tc.wantGID {
				t.Errorf("target group %d, want %d", gid, tc.wantGID)
			}
			e.unmountOK("app-1")
		})
	}
}

// A walk that fails (the driver published no target) makes the mount
// uncertain, with the kubelet's words.
func TestApplyFSGroupFailure(t *testing.T) {
	pod := `apiVersion: v1
kind: Pod
metadata: {name: app-1, namespace: default, uid: pod-uid-1}
spec:
  securityContext: {fsGroup: 4242}
  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [` + claimVol("data", "data-1") + `]`
	drv := newFakeDriver(capStage)
	drv.Update(func(c *csifake.Config) { c.ManageTargets = false })
	e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "fsGroupPolicy: File"), pv1, pvc1, pod), drv)
	ve := volErr(t, e.mount("app-1"))
	want := "applyFSGroup failed for vol vol-1: lstat " + targetPV1(e.root) + ": no such file or directory"
	if ve.Kind != csiplugin.Uncertain || ve.Err.Error() != want {
		t.Errorf("error %q (%v), want uncertain %q", ve.Err, ve.Kind, want)
	}
}
