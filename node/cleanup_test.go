package node

import (
	"context"
	"os"
	"slices"
	"testing"
)

// After a clean teardown the only thing the kubelet itself leaves is the
// <driver> dir (KUBELET.md 1.7); Cleanup reports it and removes everything
// the simulation made.
func TestCleanupAfterStagedLifecycle(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
	e.mountOK("app-1")
	e.unmountOK("app-1")
	l := e.k.Cleanup(context.Background(), false)
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

// Without staging, the kubelet also leaves <sha>/globalmount (appendix 4).
func TestCleanupAfterUnstagedLifecycle(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver())
	e.mountOK("app-1")
	e.unmountOK("app-1")
	l := e.k.Cleanup(context.Background(), true)
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

// What a driver leaves in a directory the kubelet made is reported as the
// driver's and removed.
func TestCleanupDriverLeftovers(t *testing.T) {
	drv := newFakeDriver()
	drv.KeepTarget, drv.LitterTarget = true, true
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
	e.mountOK("app-1")
	if errs := e.unmount("app-1"); len(errs) != 1 {
		t.Fatalf("teardown errors = %v, want one", errs)
	}
	l := e.k.Cleanup(context.Background(), true)
	if l.Clean() {
		t.Errorf("leftovers reported clean")
	}
	if want := []string{targetPV1(e.root)}; !slices.Equal(l.DriverPaths, want) {
		t.Errorf("DriverPaths = %q, want %q", l.DriverPaths, want)
	}
	if len(l.Errors) != 0 {
		t.Errorf("errors = %v", l.Errors)
	}
	if exists(e.root) {
		t.Errorf("root dir kept")
	}
}
