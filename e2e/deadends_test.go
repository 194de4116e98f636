package e2e

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// Messages that say what to do next (issue 23, dead ends), through the
// built binary.

// A PersistentVolume whose handle the driver does not know ends in
// NotFound, with the way out: the handle must name an existing volume, or
// a StorageClass and a claim can provision one.
func TestDeadEndNotFoundHandle(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work, "--fault", "NodeStageVolume=NotFound")
	r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", filepath.Join(work, "root"))
	wantCode(t, r, 1)
	oneLineError(t, r, `the driver does not know volume "vol-data-1": a PersistentVolume's spec.csi.volumeHandle must name a volume that exists on the driver`,
		"or let a StorageClass and a claim provision one")
}

// A missing socket names what its directory holds, sockets first.
func TestDeadEndMissingSocket(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	l, err := net.Listen("unix", filepath.Join(work, "driver.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := runSim(t, "run", "--endpoint", "unix://"+filepath.Join(work, "drvier.sock"), "--root-dir", filepath.Join(work, "root"))
	wantCode(t, r, 3)
	msg := oneLineError(t, r, "no such file or directory; "+work+" has sockets: driver.sock")
	if strings.Index(msg, "driver.sock") > strings.Index(msg, "other entries") && strings.Contains(msg, "other entries") {
		t.Errorf("sockets should come first: %s", msg)
	}
}
