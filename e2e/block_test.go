package e2e

// Block volumes (volumeMode: Block, docs/kubelet.md §1.4) against the reference
// driver, which backs them with image files on real loop devices.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

const (
	blkPV     = "pv-block"
	blkHandle = "vol-block-1"
	blkUID    = "9a3c3c6e-5555-4d2b-9c51-0e2f8d1a7b05"
)

// blkManifests: a Block PV with a Block claim, a pod using it through
// volumeDevices, and a CSIDriver with pod info and a token request (block
// NodePublish gets pod info but never tokens, docs/kubelet.md §3).
const blkManifests = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: ref.csi.kubelet-sim.io
spec:
  attachRequired: false
  podInfoOnMount: true
  tokenRequests:
    - audience: vault
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-block
spec:
  capacity:
    storage: 64Mi
  accessModes: [ReadWriteOnce]
  volumeMode: Block
  claimRef:
    namespace: default
    name: raw
  csi:
    driver: ref.csi.kubelet-sim.io
    volumeHandle: vol-block-1
    volumeAttributes:
      tier: raw
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: raw
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  volumeMode: Block
  resources:
    requests:
      storage: 64Mi
  volumeName: pv-block
---
apiVersion: v1
kind: Pod
metadata:
  name: blk
  namespace: default
  uid: 9a3c3c6e-5555-4d2b-9c51-0e2f8d1a7b05
spec:
  serviceAccountName: blk-sa
  containers:
    - name: c
      image: registry.k8s.io/pause:3.10
      volumeDevices:
        - name: raw
          devicePath: /dev/xvda
  volumes:
    - name: raw
      persistentVolumeClaim:
        claimName: raw
`

// blkDev returns the device number of a block device file, or fails.
func blkDev(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Errorf("%s: %v", p, err)
		return 0
	}
	if fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		t.Errorf("%s is not a block device (mode %v)", p, fi.Mode())
		return 0
	}
	return uint64(fi.Sys().(*syscall.Stat_t).Rdev)
}

// loopDevNum reads /sys/block/<loop>/dev ("7:0") as a device number.
func loopDevNum(name string) uint64 {
	var maj, min uint32
	if _, err := fmt.Sscanf(readFile("/sys/block/"+name+"/dev"), "%d:%d", &maj, &min); err != nil {
		return 0
	}
	return unix.Mkdev(maj, min)
}

// TestBlockRefDriver: a Block PV through the reference driver, with and
// without STAGE_UNSTAGE_VOLUME. While the pod is held, the layout of
// docs/kubelet.md §1.4 is on disk for real; the calls carry Block{} and the block
// staging path (1.4, 8); afterwards nothing is left, no loop device either.
func TestBlockRefDriver(t *testing.T) {
	for _, stage := range []bool{true, false} {
		t.Run(fmt.Sprintf("stage-unstage=%v", stage), func(t *testing.T) {
			t.Parallel()
			work := fltWork(t)
			root := filepath.Join(work, "root")
			data := filepath.Join(work, "refdata")
			drv := fltStartRef(t, work, fmt.Sprintf("--stage-unstage=%v", stage))
			mf := writeFile(t, work, "block.yaml", blkManifests)
			sim := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--hold", "3s", "-o", "json", "-v")

			// docs/kubelet.md §1.4.
			vd := root + "/plugins/kubernetes.io/csi/volumeDevices"
			staging := vd + "/staging/" + blkPV
			publish := vd + "/publish/" + blkPV + "/" + blkUID
			globalMap := vd + "/" + blkPV + "/dev"
			mapFile := globalMap + "/" + blkUID
			volData := vd + "/" + blkPV + "/data/vol_data.json"
			podLink := root + "/pods/" + blkUID + "/volumeDevices/kubernetes.io~csi/" + blkPV

			waitMounted(t, mapFile, 15*time.Second, sim.exited)
			// The kubelet's loop device over the map file is the last step
			// of MapBlockVolume: wait for it too.
			deadline := time.Now().Add(5 * time.Second)
			for len(fltLoopsUnder(root)) == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}

			// The publish path: the driver's device, a bind mount of its
			// loop device (backed by the volume's image in its data dir).
			if !isMountPoint(publish) {
				t.Errorf("publish path %s is not a mount point", publish)
			}
			pubDev := blkDev(t, publish)
			if unix.Major(pubDev) != 7 {
				t.Errorf("publish path device %d:%d is not a loop device (major 7)", unix.Major(pubDev), unix.Minor(pubDev))
			}
			driverLoops := fltLoopsUnder(data)
			if len(driverLoops) != 1 {
				t.Errorf("want one loop device backed by the driver's image under %s, got %v", data, driverLoops)
			} else if name, _, _ := strings.Cut(driverLoops[0], ":"); loopDevNum(name) != pubDev {
				t.Errorf("publish path is device %d, but the driver's loop device %s is %d", pubDev, name, loopDevNum(name))
			}
			// The kubelet's global map file: a bind mount of the publish
			// path, so the same device.
			if !isMountPoint(mapFile) {
				t.Errorf("global map file %s is not a mount point", mapFile)
			}
			if d := blkDev(t, mapFile); d != pubDev {
				t.Errorf("global map file is device %d, the publish path %d", d, pubDev)
			}
			// The pod's link points at the publish path.
			if target, err := os.Readlink(podLink); err != nil || target != publish {
				t.Errorf("pod device link %s -> %q (%v), want a symlink to %s", podLink, target, err, publish)
			}
			// The kubelet's lock: a loop device whose backing file is the
			// global map file.
			if ls := fltLoopsUnder(root); len(ls) != 1 || !strings.HasSuffix(ls[0], ": "+mapFile) {
				t.Errorf("want one loop device backed by %s, got %v", mapFile, ls)
			}
			// docs/kubelet.md §1.6: the block data file.
			want := volDataJSON(map[string]string{"specVolID": blkPV, "volumeHandle": blkHandle, "driverName": refDriverName,
				"nodeName": simNode, "attachmentID": attachmentName(blkHandle, refDriverName, simNode)})
			if got := readFile(volData); got != want {
				t.Errorf("block vol_data.json:\n got %q\nwant %q", got, want)
			}
			// docs/kubelet.md §1.5: the staging dir only when staging.
			if fi, err := os.Stat(staging); stage && (err != nil || !fi.IsDir()) {
				t.Errorf("staging dir %s: %v", staging, err)
			} else if !stage && err == nil {
				t.Errorf("no STAGE_UNSTAGE_VOLUME, but the staging dir %s exists", staging)
			}
			// What the pod writes through its link is on the one device.
			block := bytes.Repeat([]byte("csi-kubelet-sim block "), 512)[:8192]
			if f, err := os.OpenFile(podLink, os.O_RDWR|os.O_SYNC, 0); err != nil {
				t.Errorf("open the pod's device: %v", err)
			} else {
				if _, err := f.WriteAt(block, 4096); err != nil {
					t.Errorf("write the pod's device: %v", err)
				}
				f.Close()
			}
			got := make([]byte, len(block))
			if f, err := os.Open(mapFile); err != nil {
				t.Errorf("open the global map file: %v", err)
			} else {
				if _, err := f.ReadAt(got, 4096); err != nil || !bytes.Equal(got, block) {
					t.Errorf("read through the global map file: %v (same data: %v)", err, bytes.Equal(got, block))
				}
				f.Close()
			}

			r := sim.wait(t, 30*time.Second)
			wantCode(t, r, 0)
			lines := parseTrace(t, r)
			var seq []string
			for _, c := range calls(lines) {
				switch c.Method {
				case "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume":
					seq = append(seq, c.Method)
				default:
					continue
				}
				if c.Code != "OK" {
					t.Errorf("%s answered %s: %s", c.Method, c.Code, c.Error)
				}
				capWant := obj{"access_mode": obj{"mode": "SINGLE_NODE_WRITER"}, "block": obj{}}
				switch c.Method {
				case "NodeStageVolume":
					// docs/kubelet.md §1.4, §8: Block{}, no mount flags; only the
					// PV's attributes (3).
					want := obj{"volume_id": blkHandle, "staging_target_path": staging, "volume_capability": capWant,
						"volume_context": obj{"tier": "raw"}}
					if ok, diff := jsonEqual(c.Request, want); !ok {
						t.Errorf("NodeStageVolume request:\n%s", diff)
					}
				case "NodePublishVolume":
					// Always the block staging path (1.4); pod info with
					// ephemeral "false" and no tokens (3).
					want := obj{"volume_id": blkHandle, "staging_target_path": staging, "target_path": publish,
						"volume_capability": capWant, "volume_context": obj{"tier": "raw",
							"csi.storage.k8s.io/pod.name": "blk", "csi.storage.k8s.io/pod.namespace": "default",
							"csi.storage.k8s.io/pod.uid": blkUID, "csi.storage.k8s.io/serviceAccount.name": "blk-sa",
							"csi.storage.k8s.io/ephemeral": "false"}}
					if ok, diff := jsonEqual(c.Request, want); !ok {
						t.Errorf("NodePublishVolume request:\n%s", diff)
					}
				case "NodeUnpublishVolume":
					if ok, diff := jsonEqual(c.Request, obj{"volume_id": blkHandle, "target_path": publish}); !ok {
						t.Errorf("NodeUnpublishVolume request:\n%s", diff)
					}
				case "NodeUnstageVolume":
					if ok, diff := jsonEqual(c.Request, obj{"volume_id": blkHandle, "staging_target_path": staging}); !ok {
						t.Errorf("NodeUnstageVolume request:\n%s", diff)
					}
				}
			}
			wantSeq := "NodePublishVolume,NodeUnpublishVolume"
			if stage {
				wantSeq = "NodeStageVolume,NodePublishVolume,NodeUnpublishVolume,NodeUnstageVolume"
			}
			if strings.Join(seq, ",") != wantSeq {
				t.Errorf("volume calls %v, want %s", seq, wantSeq)
			}
			fltAssertClean(t, root, work)
		})
	}
}

// TestBlockRepublish: a driver with requiresRepublish and a block volume.
// The kubelet's remount of a block volume is the whole map operation again
// (GenerateMapVolumeFunc, docs/kubelet.md §5): NodePublish with the block publish
// path and Block{}, never the filesystem target or a second NodeStage; and
// MapBlockVolume finds its bind mount already there, so the global map file
// stays one mount, not a stack of them.
func TestBlockRepublish(t *testing.T) {
	t.Parallel()
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work)
	manifests := strings.Replace(blkManifests, "  attachRequired: false\n", "  attachRequired: false\n  requiresRepublish: true\n", 1)
	mf := writeFile(t, work, "block.yaml", manifests)
	sim := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--hold", "2500ms", "--republish-period", "500ms", "--volume-stats-agg-period", "0", "-o", "json")
	vd := root + "/plugins/kubernetes.io/csi/volumeDevices"
	staging := vd + "/staging/" + blkPV
	publish := vd + "/publish/" + blkPV + "/" + blkUID
	mapFile := vd + "/" + blkPV + "/dev/" + blkUID
	waitMounted(t, mapFile, 15*time.Second, sim.exited)
	// Let a few republishes happen, then count the mounts on the map file.
	time.Sleep(1600 * time.Millisecond)
	if n := mountCount(t, mapFile); n != 1 {
		t.Errorf("global map file %s is mounted %d times after republishes, want once", mapFile, n)
	}
	if n := mountCount(t, publish); n != 1 {
		t.Errorf("publish path %s is mounted %d times after republishes, want once", publish, n)
	}
	r := sim.wait(t, 30*time.Second)
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)
	var stages, publishes int
	for _, c := range calls(parseTrace(t, r)) {
		switch c.Method {
		case "NodeStageVolume":
			stages++
		case "NodePublishVolume":
			publishes++
			if c.Code != "OK" {
				t.Errorf("NodePublishVolume (%s) answered %s: %s", c.Operation, c.Code, c.Error)
			}
			want := obj{"volume_id": blkHandle, "staging_target_path": staging, "target_path": publish,
				"volume_capability": obj{"access_mode": obj{"mode": "SINGLE_NODE_WRITER"}, "block": obj{}},
				"volume_context": obj{"tier": "raw",
					"csi.storage.k8s.io/pod.name": "blk", "csi.storage.k8s.io/pod.namespace": "default",
					"csi.storage.k8s.io/pod.uid": blkUID, "csi.storage.k8s.io/serviceAccount.name": "blk-sa",
					"csi.storage.k8s.io/ephemeral": "false"}}
			if ok, diff := jsonEqual(c.Request, want); !ok {
				t.Errorf("NodePublishVolume (%s) request:\n%s", c.Operation, diff)
			}
			if publishes > 1 && !strings.HasPrefix(c.Operation, "MapPodDevice#") {
				t.Errorf("republish %d is operation %q, want MapPodDevice#n", publishes-1, c.Operation)
			}
		}
	}
	if stages != 1 || publishes < 3 {
		t.Errorf("%d NodeStageVolume and %d NodePublishVolume, want exactly 1 and at least 3", stages, publishes)
	}
}

// mountCount is how many mountinfo entries have p as mount point.
func mountCount(t *testing.T, p string) int {
	t.Helper()
	ms, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.Mountpoint != p, false
	})
	if err != nil {
		t.Fatalf("mountinfo: %v", err)
	}
	return len(ms)
}

// TestBlockExpand: the claim's status says 64Mi, --expand-to makes the PV
// 128Mi, so after MapPodDevice the kubelet sends NodeExpandVolume for the
// block volume (expandVolumeDuringMount, docs/kubelet.md §11): volume_path the
// published device, Block{}, staging_target_path only when this operation
// staged it; then the reconciler's in-use expansion with the same request
// but the staging path always (§15.4). The reference driver grows the image
// and its loop device, and the pod's device really is 128Mi while the pod
// runs.
func TestBlockExpand(t *testing.T) {
	for _, stage := range []bool{true, false} {
		t.Run(fmt.Sprintf("stage-unstage=%v", stage), func(t *testing.T) {
			t.Parallel()
			work := fltWork(t)
			root := filepath.Join(work, "root")
			drv := fltStartRef(t, work, "--node-expand", fmt.Sprintf("--stage-unstage=%v", stage))
			manifests := strings.Replace(blkManifests, "  volumeName: pv-block\n",
				"  volumeName: pv-block\nstatus:\n  phase: Bound\n  capacity:\n    storage: 64Mi\n", 1)
			mf := writeFile(t, work, "block.yaml", manifests)
			sim := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--expand-to", "128Mi", "--hold", "2s", "--volume-stats-agg-period", "0", "-o", "json")
			vd := root + "/plugins/kubernetes.io/csi/volumeDevices"
			publish := vd + "/publish/" + blkPV + "/" + blkUID
			mapFile := vd + "/" + blkPV + "/dev/" + blkUID
			waitMounted(t, mapFile, 15*time.Second, sim.exited)
			var size int64
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if size = deviceSize(t, mapFile); size == 128<<20 {
					break
				}
			}
			if size != 128<<20 {
				t.Errorf("the pod's device is %d bytes while the pod runs, want %d (expanded)", size, 128<<20)
			}
			r := sim.wait(t, 30*time.Second)
			wantCode(t, r, 0)
			assertNothingLeft(t, root, work)
			var expands []traceLine
			for _, c := range calls(parseTrace(t, r)) {
				if c.Method == "NodeExpandVolume" {
					expands = append(expands, c)
				}
			}
			if len(expands) != 2 {
				t.Fatalf("%d NodeExpandVolume calls, want 2 (at map, then in use)", len(expands))
			}
			want := obj{"volume_id": blkHandle, "volume_path": publish, "capacity_range": obj{"required_bytes": "134217728"},
				"volume_capability": obj{"access_mode": obj{"mode": "SINGLE_NODE_WRITER"}, "block": obj{}}}
			if stage {
				want["staging_target_path"] = vd + "/staging/" + blkPV
			}
			if ok, diff := jsonEqual(expands[0].Request, want); !ok {
				t.Errorf("NodeExpandVolume request:\n%s", diff)
			}
			want["staging_target_path"] = vd + "/staging/" + blkPV
			if ok, diff := jsonEqual(expands[1].Request, want); !ok {
				t.Errorf("in-use NodeExpandVolume request:\n%s", diff)
			}
			for _, ex := range expands {
				if ex.Code != "OK" {
					t.Errorf("NodeExpandVolume answered %s: %s", ex.Code, ex.Error)
				}
			}
		})
	}
}

// deviceSize is the size of the block device at p (BLKGETSIZE64).
func deviceSize(t *testing.T, p string) int64 {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Errorf("open %s: %v", p, err)
		return 0
	}
	defer f.Close()
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKGETSIZE64)
	if err != nil {
		t.Errorf("BLKGETSIZE64 %s: %v", p, err)
		return 0
	}
	return int64(n)
}
