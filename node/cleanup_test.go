package node

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// After a clean teardown the only thing the kubelet itself leaves is the
// <driver> dir (docs/kubelet.md §1.7); Cleanup reports it and removes everything
// the simulation made.
func TestCleanupAfterStagedLifecycle(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
	e.mountOK("app-1")
	e.unmountOK("app-1")
	l := e.k.vm.Cleanup(context.Background(), false)
	if !l.Clean() || len(l.Mounts) != 0 {
		t.Errorf("leftovers = %+v, want clean", l)
	}
	want := []string{e.root + "/plugins/kubernetes.io/csi/hostpath.csi.k8s.io"}
	if !slices.Equal(l.KubeletPaths, want) {
		t.Errorf("KubeletPaths = %q, want %q", l.KubeletPaths, want)
	}
	if entries, err := os.ReadDir(e.root); err != nil || len(entries) != 0 {
		t.Errorf("root dir after Cleanup: %v, %v; want empty", entries, err)
	}
}

// Without staging, the kubelet also leaves <sha>/globalmount (docs/kubelet.md §21.4).
func TestCleanupAfterUnstagedLifecycle(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver())
	e.mountOK("app-1")
	e.unmountOK("app-1")
	l := e.k.vm.Cleanup(context.Background(), true)
	driverDir := e.root + "/plugins/kubernetes.io/csi/hostpath.csi.k8s.io"
	want := []string{driverDir, driverDir + "/" + sha256Vol1, driverDir + "/" + sha256Vol1 + "/globalmount"}
	if !slices.Equal(l.KubeletPaths, want) {
		t.Errorf("KubeletPaths = %q, want %q", l.KubeletPaths, want)
	}
	if !l.Clean() {
		t.Errorf("leftovers = %+v, want clean", l)
	}
	if exists(e.root) {
		t.Errorf("root dir kept with removeRoot")
	}
}

// What a driver leaves in a target makes the kubelet's TearDown fail; the
// volume is then kept as it is, with the driver's file, for `cleanup`,
// and nothing inside it is deleted.
func TestCleanupDriverLeftovers(t *testing.T) {
	drv := newFakeDriver()
	keepTarget(drv)
	litterTarget(drv)
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
	e.mountOK("app-1")
	if errs := e.unmount("app-1"); len(errs) != 1 {
		t.Fatalf("teardown errors = %v, want one", errs)
	}
	l := e.k.vm.Cleanup(context.Background(), true)
	if l.Clean() {
		t.Errorf("leftovers reported clean")
	}
	if !l.KeptForCleanup() || l.Left[0].Path != filepath.Dir(targetPV1(e.root)) || l.Left[0].Owner != volumemanager.OwnerSimulator {
		t.Errorf("Left = %+v, want the pod volume dir kept as the simulator's", l.Left)
	}
	if len(l.Errors) != 0 {
		t.Errorf("errors = %v", l.Errors)
	}
	entries, _ := os.ReadDir(targetPV1(e.root))
	if len(entries) == 0 {
		t.Errorf("the driver's files in the target were deleted")
	}
	if l.Journal == "" || !exists(l.Journal) {
		t.Errorf("journal %q not kept for cleanup", l.Journal)
	}
}
