package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// parallelManifests: pods app-0..app-9 share pv-shared (one volume, one
// device), pods own-0..own-(n-1) have a PV each.
func parallelManifests(own int) string {
	ds := []string{noAttachDriver,
		pvDoc("pv-shared", "vol-shared", "shared", "accessModes: [ReadWriteMany]"), pvcDoc("shared", "pv-shared")}
	for i := range 10 {
		ds = append(ds, podDoc(fmt.Sprintf("app-%d", i), fmt.Sprintf("uid-app-%d", i), claimVol("data", "shared")))
	}
	for i := range own {
		pv, claim := fmt.Sprintf("pv-own-%d", i), fmt.Sprintf("own-%d", i)
		ds = append(ds, pvDoc(pv, "vol-"+claim, claim), pvcDoc(claim, pv),
			podDoc("own-"+fmt.Sprint(i), "uid-own-"+fmt.Sprint(i), claimVol("data", claim)))
	}
	return docs(ds...)
}

// Run with Parallel: the reconciler's way. Every pod is mounted and torn
// down; a device shared by ten pods that run at the same time is staged
// once and unstaged once, after its last pod; nothing is left.
func TestRunParallel(t *testing.T) {
	drv := newFakeDriver(capStage)
	e := newUnregisteredEnv(t, parallelManifests(20), drv)
	out := e.k.Run(context.Background(), Plan{Parallel: true, Hold: 500 * time.Millisecond})
	if out.RegErr != nil || out.MountErr != nil || out.Failed != 0 || len(out.TeardownErrs) != 0 {
		t.Fatalf("outcome: reg %v, mount %v, failed %d, teardown %v", out.RegErr, out.MountErr, out.Failed, out.TeardownErrs)
	}
	if out.Pods != 30 {
		t.Errorf("pods = %d, want 30", out.Pods)
	}
	count := func(method, handle string) int {
		n := 0
		for _, c := range only(drv.Calls(), method) {
			id := ""
			switch r := c.Request.(type) {
			case *csi.NodeStageVolumeRequest:
				id = r.VolumeId
			case *csi.NodeUnstageVolumeRequest:
				id = r.VolumeId
			}
			if handle == "" || id == handle {
				n++
			}
		}
		return n
	}
	for _, w := range []struct {
		method, handle string
		want           int
	}{
		{"NodeStageVolume", "vol-shared", 1}, {"NodeUnstageVolume", "vol-shared", 1},
		{"NodeStageVolume", "", 21}, {"NodeUnstageVolume", "", 21},
		{"NodePublishVolume", "", 30}, {"NodeUnpublishVolume", "", 30},
	} {
		if got := count(w.method, w.handle); got != w.want {
			t.Errorf("%s %s: %d calls, want %d", w.method, w.handle, got, w.want)
		}
	}
	if !out.Leftovers.Clean() {
		t.Errorf("leftovers: %+v", out.Leftovers)
	}
	if entries, _ := os.ReadDir(e.root); len(entries) != 0 {
		t.Errorf("root dir not empty: %v", entries)
	}
}

// After a kill -9 the journal stays; a new run refuses the root dir, and
// Recover reconstructs the volume from disk and tears it down through the
// driver: NodeUnpublish then NodeUnstage, and the journal goes.
func TestRecoverAfterCrash(t *testing.T) {
	drv := newFakeDriver(capStage)
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
	e.mountOK("app-1") // and the process dies: no teardown
	if err := rootdir.CheckRoot(e.root); err == nil {
		t.Fatalf("CheckRoot accepted a root dir with an unfinished run")
	}
	drv.ClearCalls()
	k := New(Config{RootDir: e.root, NodeName: testNode, Cluster: e.cluster, Conn: drv, Trace: e.trace})
	out := k.Recover(context.Background(), nil)
	if out.RegErr != nil || len(out.TeardownErrs) != 0 {
		t.Fatalf("recover: reg %v, teardown %v", out.RegErr, out.TeardownErrs)
	}
	want := []string{"NodeUnpublishVolume", "NodeUnstageVolume"}
	var got []string
	for _, c := range drv.Calls() {
		if c.Method == "NodeUnpublishVolume" || c.Method == "NodeUnstageVolume" {
			got = append(got, c.Method)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("recover calls %v, want %v", got, want)
	}
	if !out.Leftovers.Clean() {
		t.Errorf("leftovers after recover: %+v", out.Leftovers)
	}
	if js, _ := rootdir.Journals(e.root); len(js) != 0 {
		t.Errorf("journals left: %v", js)
	}
	if err := rootdir.CheckRoot(e.root); err != nil {
		t.Errorf("CheckRoot after recover: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(e.root, "pods")); len(entries) != 0 {
		t.Errorf("pod dirs left: %v", entries)
	}
}
