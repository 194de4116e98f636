package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCleanupForce: a run killed (-9) with a provisioned, attached,
// staged and published volume; the driver then refuses the volume for
// good (NotFound: it no longer knows it) in one teardown call. `cleanup`
// exits 1, keeps everything, and says how --force finishes; `cleanup
// --force` unmounts and removes what the journal recorded, drops the
// controller records, says so, exits 0, and leaves nothing under the
// root dir.
func TestCleanupForce(t *testing.T) {
	for _, fault := range []string{"NodeUnpublishVolume=NotFound", "NodeUnstageVolume=NotFound", "ControllerUnpublishVolume=NotFound"} {
		t.Run(strings.TrimSuffix(fault, "=NotFound"), func(t *testing.T) {
			work := fltWork(t)
			drv := fltStartRef(t, work, "--stage-unstage", "--controller-publish", "--fault", fault)
			mf := writeFile(t, work, "m.yaml", classManifests(refDriverName, "", "1Gi"))
			root := filepath.Join(work, "root")
			s := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "--hold", "forever")
			target := filepath.Join(root, "pods", "9a3c3c6e-2222-4d2b-9c51-0e2f8d1a7b05", "volumes", "kubernetes.io~csi", claimPV, "mount")
			waitMounted(t, target, 30*time.Second, s.exited)
			_ = s.cmd.Process.Signal(syscall.SIGKILL)
			<-s.exited

			ep := "unix://" + drv.Sock
			for i := range 2 {
				r := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
				r.Stderr = withoutNotes(t, r.Stderr, "was locked by")
				wantCode(t, r, 1)
				oneLineError(t, r, "NotFound", "cleanup --force removes what the journal recorded after the driver refused",
					"csi-kubelet-sim cleanup --force --root-dir "+root)
				if _, err := os.Stat(filepath.Join(root, ".csi-kubelet-sim")); err != nil {
					t.Fatalf("cleanup %d without --force removed the records: %v", i+1, err)
				}
			}
			r := runSim(t, "cleanup", "--force", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
			r.Stderr = withoutNotes(t, r.Stderr, "was locked by")
			wantCode(t, r, 0)
			if !strings.Contains(r.Stdout, "--force: ") {
				t.Errorf("cleanup --force does not say what it did:\n%s", r)
			}
			if strings.HasPrefix(fault, "Node") && !strings.Contains(r.Stdout, "--force: unmounted "+root+"/") {
				t.Errorf("cleanup --force does not say what it unmounted:\n%s", r)
			}
			if strings.HasPrefix(fault, "Controller") && !strings.Contains(r.Stdout, "--force: dropped the record of the attachment of "+claimPV) {
				t.Errorf("cleanup --force does not say it dropped the attachment:\n%s", r)
			}
			assertNothingLeft(t, root, "")
			if ms := mountsUnder(root); len(ms) > 0 {
				t.Errorf("still mounted: %v", ms)
			}
		})
	}
}

// TestCleanupForceLeavesForeign: --force removes only what the journal
// recorded: a file another program put in the staged volume's directory
// (beside vol_data.json) stops the removal there; the file stays, and so
// does the record naming the directory.
func TestCleanupForceLeavesForeign(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work, "--stage-unstage", "--fault", "NodeUnstageVolume=NotFound")
	root := filepath.Join(work, "root")
	s := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--hold", "forever", "--volume-stats-agg-period", "0")
	rcvWaitInUse(t, root, "staged", s.exited)
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	staging := stagingPath(root, refDriverName, "vol-data-1")
	foreign := filepath.Join(filepath.Dir(staging), "someone-elses")
	if err := os.WriteFile(foreign, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runSim(t, "cleanup", "--force", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
	r.Stderr = withoutNotes(t, r.Stderr, "was locked by")
	wantCode(t, r, 1)
	if b, err := os.ReadFile(foreign); err != nil || string(b) != "keep me" {
		t.Errorf("the foreign file was touched: %q, %v", b, err)
	}
	if !strings.Contains(r.Stdout, foreign+" is not recorded in the journal") {
		t.Errorf("cleanup --force does not name the foreign file:\n%s", r)
	}
	_ = os.Remove(foreign)
	unmountAll(root)
}
