package e2e

// Nothing foreign touched, round three (issue 28): a directory mounted
// over one of the root dir's own, during a run, by a hostile driver or by
// hand, leads neither the run's teardown nor `cleanup` into it; a hard
// link put at vol_data.json gets no foreign file read, written or removed.
// Each is refused with exit 2 naming it, and every file of the foreign
// directory is still there, unchanged.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	plantBlockUID = "9a3c3c6e-6666-4d2b-9c51-0e2f8d1a7b06" // fixtures/samples/block
	plantBlockPV  = "pv-raw"
)

// plantCase is a trap the reference driver lays after a call: a bind
// mount of the foreign dir over the directory up levels above the call's
// path (or a hard link at vol_data.json there).
type plantCase struct {
	sample string
	method string
	up     int
	path   func(root string) string // the call's path
}

func (c plantCase) dir(root string) string {
	d := c.path(root)
	for range c.up {
		d = filepath.Dir(d)
	}
	return d
}

func (c plantCase) String() string { return fmt.Sprintf("%s/%s+%d", c.sample, c.method, c.up) }

func plantTarget(root string) string { return targetPath(root, stagedUID, semPV) }
func plantStaging(root string) string {
	return stagingPath(root, refDriverName, semHandle)
}
func plantBlockPublish(root string) string {
	return root + "/plugins/kubernetes.io/csi/volumeDevices/publish/" + plantBlockPV + "/" + plantBlockUID
}
func plantBlockStaging(root string) string {
	return root + "/plugins/kubernetes.io/csi/volumeDevices/staging/" + plantBlockPV
}

// plantSeed fills the foreign dir: the names the teardown removes, at its
// top and at the place below it where the simulator's own would be, so
// that a walk through the mount finds exactly what it looks for.
func plantSeed(t *testing.T, foreign, root, planted string) {
	t.Helper()
	files := []string{"vol_data.json", "data/vol_data.json", "dev/" + stagedUID, "precious"}
	dirs := []string{"mount", "globalmount"}
	own := []struct {
		p   string
		dir bool
	}{
		{plantTarget(root), true},
		{filepath.Join(filepath.Dir(plantTarget(root)), "vol_data.json"), false},
		{plantStaging(root), true},
		{filepath.Join(filepath.Dir(plantStaging(root)), "vol_data.json"), false},
		{plantBlockPublish(root), false},
		{plantBlockStaging(root), true},
		{root + "/plugins/kubernetes.io/csi/volumeDevices/" + plantBlockPV + "/data/vol_data.json", false},
		{root + "/plugins/kubernetes.io/csi/volumeDevices/" + plantBlockPV + "/dev/" + plantBlockUID, false},
		{root + "/pods/" + plantBlockUID + "/volumeDevices/kubernetes.io~csi/" + plantBlockPV, false},
	}
	for _, o := range own {
		if rel, ok := strings.CutPrefix(o.p, planted+"/"); ok {
			if o.dir {
				dirs = append(dirs, rel)
			} else {
				files = append(files, rel)
			}
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(foreign, d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		p := filepath.Join(foreign, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		content := fmt.Sprintf(`{"driverName":%q,"specVolID":%q,"volumeHandle":%q,"foreign":%q}`+"\n", refDriverName, semPV, semHandle, f)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// plantTree is sfTree with each file's content: a file rewritten with
// the same length is a change too.
func plantTree(dir string) []string {
	out := sfTree(dir)
	for i, line := range out {
		p, _, _ := strings.Cut(line, " ")
		if b, err := os.ReadFile(p); err == nil {
			out[i] = line + " " + string(b)
		}
	}
	return out
}

// TestPlantedMountRefused: for each directory the teardown walks, the
// driver bind-mounts a foreign directory over it after one of its calls
// (publish, stage, unpublish, unstage; filesystem and block volumes).
// `run` exits 2 naming the mount; `cleanup` with the mount still there
// exits 2 too; the foreign directory keeps every file, unchanged. Once the
// mount is gone, `cleanup` finishes the run.
func TestPlantedMountRefused(t *testing.T) {
	var cases []plantCase
	for up := 1; up <= 5; up++ {
		cases = append(cases, plantCase{"staged", "NodePublishVolume", up, plantTarget})
	}
	for up := 1; up <= 5; up++ {
		cases = append(cases, plantCase{"staged", "NodeStageVolume", up, plantStaging})
	}
	cases = append(cases,
		plantCase{"staged", "NodeUnpublishVolume", 1, plantTarget},
		plantCase{"staged", "NodeUnpublishVolume", 2, plantTarget},
		plantCase{"staged", "NodeUnpublishVolume", 3, plantTarget},
		plantCase{"staged", "NodeUnstageVolume", 1, plantStaging},
		plantCase{"staged", "NodeUnstageVolume", 2, plantStaging},
		plantCase{"staged", "NodeUnstageVolume", 3, plantStaging},
	)
	for up := 1; up <= 4; up++ {
		cases = append(cases, plantCase{"block", "NodePublishVolume", up, plantBlockPublish})
	}
	cases = append(cases, plantCase{"block", "NodeStageVolume", 1, plantBlockStaging}, plantCase{"block", "NodeStageVolume", 2, plantBlockStaging})
	if os.Getenv("PLANT_ONLY") != "" {
		cases = slices.DeleteFunc(cases, func(c plantCase) bool { return !strings.Contains(c.String(), os.Getenv("PLANT_ONLY")) })
	}
	lost := 0
	for _, tc := range cases {
		t.Run(tc.String(), func(t *testing.T) {
			work := fltWork(t)
			root := filepath.Join(work, "root")
			foreign := filepath.Join(work, "foreign")
			planted := tc.dir(root)
			plantSeed(t, foreign, root, planted)
			before := plantTree(foreign)
			drv := fltStartRef(t, work, "--fault", fmt.Sprintf("%s=plantmount:%d:%s:1", tc.method, tc.up, foreign))
			r := runSim(t, "run", "-f", sample(t, tc.sample), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--volume-stats-agg-period", "0")
			if !isMountPoint(planted) {
				t.Fatalf("the driver planted nothing at %s:\n%s", planted, r)
			}
			if r.Code != 2 || !strings.Contains(r.Stderr, planted+" is a mount point") {
				t.Errorf("run: want exit 2 naming the mount at %s:\n%s", planted, r)
			}
			t.Logf("run: exit %d: %s", r.Code, strings.TrimSpace(r.Stderr))
			c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
			if c.Code != 2 || !strings.Contains(c.Stderr+c.Stdout, planted) {
				t.Errorf("cleanup with the mount still there: want exit 2 naming %s:\n%s", planted, c)
			}
			first := c
			if after := plantTree(foreign); !slices.Equal(before, after) {
				lost++
				t.Errorf("the foreign dir changed:\n before %q\n after  %q", before, after)
			}
			// The user takes the mount away; `cleanup` finishes.
			if err := syscall.Unmount(planted, 0); err != nil {
				t.Fatalf("unmount %s: %v", planted, err)
			}
			c = runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
			if c.Code != 0 {
				t.Errorf("cleanup once the mount is gone: want exit 0:\n%s\nafter the first cleanup:\n%s", c, first)
			}
			if ms := mountsUnder(root); len(ms) > 0 {
				t.Errorf("still mounted after cleanup: %v", ms)
			}
		})
	}
	t.Logf("%d planted mounts, %d with foreign files lost or changed", len(cases), lost)
}

// TestPlantedHardLinkRefused: the driver puts a hard link to a foreign
// file at vol_data.json after its call (the pod volume's, the staged
// volume's). The simulator reads, writes and removes nothing through it:
// exit 2 naming it, the foreign file unchanged and with no name but the
// planted one added.
func TestPlantedHardLinkRefused(t *testing.T) {
	cases := []plantCase{
		{"staged", "NodePublishVolume", 1, plantTarget},
		{"staged", "NodeStageVolume", 1, plantStaging},
	}
	for _, tc := range cases {
		t.Run(tc.String(), func(t *testing.T) {
			work := fltWork(t)
			root := filepath.Join(work, "root")
			precious := writeFile(t, work, "precious.json", `{"foreign":"data"}`+"\n")
			drv := fltStartRef(t, work, "--fault", fmt.Sprintf("%s=plantlink:%d:%s:1", tc.method, tc.up, precious))
			r := runSim(t, "run", "-f", sample(t, tc.sample), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--volume-stats-agg-period", "0")
			link := filepath.Join(tc.dir(root), "vol_data.json")
			if r.Code != 2 || !strings.Contains(r.Stderr, link) || !strings.Contains(r.Stderr, "hard link") {
				t.Errorf("run: want exit 2 naming the hard link %s:\n%s", link, r)
			}
			c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
			if c.Code != 2 {
				t.Errorf("cleanup with the hard link still there: want exit 2:\n%s", c)
			}
			if got := readFile(precious); got != `{"foreign":"data"}`+"\n" {
				t.Errorf("the foreign file reads %q", got)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(precious, &st); err != nil || st.Nlink != 2 {
				t.Errorf("the foreign file has %d names (%v), want 2: its own and the planted link, untouched", st.Nlink, err)
			}
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			c = runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
			if c.Code != 0 {
				t.Errorf("cleanup once the link is gone: want exit 0:\n%s", c)
			}
			if ms := mountsUnder(root); len(ms) > 0 {
				t.Errorf("still mounted after cleanup: %v", ms)
			}
		})
	}
}

// TestMountOverVolumeDirByHand is the reproduction, with no
// special driver: during `run --hold`, a foreign copy of the pod volume
// dir (its vol_data.json, a mount/ dir) is bind-mounted over it. The run
// exits 2 naming the mount, and the foreign vol_data.json is still there.
// The same for the journal dir: a foreign dir holding files named as the
// run's journal and a sidecars record.
func TestMountOverVolumeDirByHand(t *testing.T) {
	for _, over := range []string{"volume", "journal"} {
		t.Run(over, func(t *testing.T) {
			work := fltWork(t)
			root := filepath.Join(work, "root")
			drv := fltStartRef(t, work)
			sim := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--hold", "6s", "--volume-stats-agg-period", "0")
			rcvWaitInUse(t, root, "staged", sim.exited)
			foreign := filepath.Join(work, "foreign")
			if err := os.MkdirAll(filepath.Join(foreign, "mount"), 0o750); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Dir(targetPath(root, stagedUID, semPV))
			if over == "volume" {
				writeFile(t, foreign, "vol_data.json", readFile(filepath.Join(dir, "vol_data.json")))
			} else {
				dir = filepath.Join(root, ".csi-kubelet-sim")
				entries, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					writeFile(t, foreign, e.Name(), readFile(filepath.Join(dir, e.Name())))
				}
				writeFile(t, foreign, "sidecars-1-2.controller", "{}\n")
			}
			before := plantTree(foreign)
			bindMount(t, foreign, dir)
			r := sim.wait(t, 60*time.Second)
			if r.Code != 2 || !strings.Contains(r.Stderr, dir+" is a mount point") {
				t.Errorf("want exit 2 naming the mount at %s:\n%s", dir, r)
			}
			if after := plantTree(foreign); !slices.Equal(before, after) {
				t.Errorf("the foreign dir changed:\n before %q\n after  %q", before, after)
			}
			c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
			if c.Code != 2 || !strings.Contains(c.Stderr+c.Stdout, dir) {
				t.Errorf("cleanup with the mount still there: want exit 2 naming %s:\n%s", dir, c)
			}
			if after := plantTree(foreign); !slices.Equal(before, after) {
				t.Errorf("cleanup changed the foreign dir:\n before %q\n after  %q", before, after)
			}
			if err := syscall.Unmount(dir, 0); err != nil {
				t.Fatalf("unmount %s: %v", dir, err)
			}
			c = runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
			if c.Code != 0 {
				t.Errorf("cleanup once the mount is gone: want exit 0:\n%s", c)
			}
			if ms := mountsUnder(root); len(ms) > 0 {
				t.Errorf("still mounted after cleanup: %v", ms)
			}
		})
	}
}

// TestPlantedHardLinkRepublish: a driver whose CSIDriver asks for
// republishing puts a hard link to a foreign file at the pod volume's
// vol_data.json after the first NodePublishVolume; the republish that
// follows writes vol_data.json again (SetUp). The foreign file is not
// overwritten: exit 2 naming the link.
func TestPlantedHardLinkRepublish(t *testing.T) {
	staged, err := os.ReadFile(filepath.Join(sample(t, "staged"), "staged.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifests := strings.Replace(string(staged), "  podInfoOnMount: false\n", "  podInfoOnMount: false\n  requiresRepublish: true\n", 1)
	if manifests == string(staged) {
		t.Fatal("the staged sample's CSIDriver changed: no podInfoOnMount line to add requiresRepublish after")
	}
	work := fltWork(t)
	root := filepath.Join(work, "root")
	const content = `{"foreign":"data, longer than the vol_data.json that would overwrite it, so that a rewrite shows in its length and content alike ........................................................................................................................................................................................................................................................."}` + "\n"
	precious := writeFile(t, work, "precious.json", content)
	drv := fltStartRef(t, work, "--fault", "NodePublishVolume=plantlink:1:"+precious+":1")
	mf := writeFile(t, work, "m.yaml", manifests)
	r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--hold", "2s", "--volume-stats-agg-period", "0")
	link := filepath.Join(filepath.Dir(plantTarget(root)), "vol_data.json")
	if r.Code != 2 || !strings.Contains(r.Stderr, link) || !strings.Contains(r.Stderr, "hard link") {
		t.Errorf("run: want exit 2 naming the hard link %s:\n%s", link, r)
	}
	if got := readFile(precious); got != content {
		t.Errorf("the foreign file was overwritten: it reads %q", got)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
	if c.Code != 0 {
		t.Errorf("cleanup once the link is gone: want exit 0:\n%s", c)
	}
	if ms := mountsUnder(root); len(ms) > 0 {
		t.Errorf("still mounted after cleanup: %v", ms)
	}
}
