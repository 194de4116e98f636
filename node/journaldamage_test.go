package node

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// A run killed between its mount intent and its vol_data.json record (or
// in the middle of writing that record) leaves a genuine journal:
// `cleanup` finishes it without calling any record forged.
func TestRecoverKilledBeforeVolData(t *testing.T) {
	for _, torn := range []bool{false, true} {
		drv := newFakeDriver(capStage)
		e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
		p := rootdir.Paths{Root: e.root}
		vol := p.PodVolumeDir("pod-uid-1", "pv-1")
		staging := p.DeviceMountPath(testDriver, "vol-1")
		// MountDevice and SetUpAt, as far as the kill: the mount path
		// marked, the dir made, vol_data.json journaled as a file.
		for _, x := range []struct{ mnt, dir string }{{staging, staging}, {vol + "/mount", vol}} {
			e.k.vm.FS.MarkMountPath(x.mnt)
			must(t, e.k.vm.FS.MkdirAll(x.dir, 0o750))
			e.k.vm.FS.Remember(filepath.Join(filepath.Dir(x.mnt), rootdir.VolDataFileName))
		}
		jpath := e.k.vm.FS.Journal.Path
		e.k.vm.FS.Journal.Close()
		if torn {
			rec, _ := json.Marshal(rootdir.JournalRecord{Kind: rootdir.RecordVolData, Path: vol, Data: map[string]string{"specVolID": "pv-1", "driverName": testDriver, "volumeHandle": "vol-1"}})
			jf, err := os.OpenFile(jpath, os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			_, err = jf.Write(rec[:len(rec)-1]) // all but the closing brace, no newline
			must(t, err)
			jf.Close()
		}
		k := New(Config{RootDir: e.root, NodeName: testNode, Cluster: e.cluster, Conn: drv, Trace: e.trace})
		out := k.Recover(context.Background(), nil)
		if out.MountErr != nil || out.RegErr != nil || len(out.TeardownErrs) != 0 || !out.Leftovers.Clean() {
			t.Errorf("torn %v: recover: %v %v %v %+v", torn, out.MountErr, out.RegErr, out.TeardownErrs, out.Leftovers)
		}
		for _, w := range e.steps(true) {
			if strings.Contains(w, "refused") {
				t.Errorf("torn %v: a genuine record refused: %s", torn, w)
			}
		}
		if entries, _ := os.ReadDir(e.root); len(entries) != 0 {
			t.Errorf("torn %v: left under the root dir: %v", torn, entries)
		}
	}
}
