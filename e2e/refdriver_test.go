package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// refSample describes one fixtures/samples/<dir> and what docs/kubelet.md says its
// volume looks like on the node.
type refSample struct {
	dir      string
	podUID   string
	specName string // docs/kubelet.md §1.2: the PV name, or the inline volume's name
	handle   string // the volume handle the driver gets
	mode     string // volumeLifecycleMode in vol_data.json (docs/kubelet.md §1.6)
	staged   bool   // a PV, so MountDevice runs (docs/kubelet.md §2: never for inline)
}

// refSamples are the samples, with values copied from their manifests.
var refSamples = []refSample{
	{dir: "inline", podUID: inlineUID, specName: "scratch", handle: inlineHandle(inlineUID, "scratch"), mode: "Ephemeral"},
	{dir: "staged", podUID: stagedUID, specName: "pv-data", handle: "vol-data-1", mode: "Persistent", staged: true},
	{dir: "attach", podUID: attachUID, specName: "pv-attached", handle: "vol-attached-1", mode: "Persistent", staged: true},
	{dir: "secrets", podUID: secretsUID, specName: "pv-secure", handle: "vol-secure-1", mode: "Persistent", staged: true},
	// No PV in the sample: the volume is provisioned, named after the
	// claim's UID (docs/kubelet.md §22).
	{dir: "provision", podUID: "9a3c3c6e-5555-4d2b-9c51-0e2f8d1a7b06", specName: "pvc-5c1a2b3d-5555-4e6f-8a7b-9c0d1e2f3a4b",
		handle: "pvc-5c1a2b3d-5555-4e6f-8a7b-9c0d1e2f3a4b", mode: "Persistent", staged: true},
}

// volDataJSON is the exact content of a vol_data.json (docs/kubelet.md §1.6:
// encoding/json of a map[string]string, keys sorted, then a newline).
func volDataJSON(m map[string]string) string {
	b, _ := json.Marshal(m)
	return string(b) + "\n"
}

// TestRefDriverSamples runs every sample against the reference driver with
// real bind mounts. While the pod is held, the target path (docs/kubelet.md §1.2)
// and, for PVs, the staging path (1.3) are mount points and the kubelet's
// vol_data.json files (1.6) are as the kubelet writes them; afterwards the run
// exits 0 and nothing is left.
func TestRefDriverSamples(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir; mostly waiting on the driver
	for _, s := range refSamples {
		t.Run(s.dir, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			drv := startRefDriver(t, work)
			root := filepath.Join(work, "root")

			sim := startSim(t, "run", "-f", sample(t, s.dir), "--endpoint", "unix://"+drv.Sock,
				"--root-dir", root, "--node-name", simNode, "--hold", "3s", "-o", "json")

			target := targetPath(root, s.podUID, s.specName)
			waitMounted(t, target, 10*time.Second, sim.exited)
			if !isMountPoint(target) {
				t.Errorf("target %s is not a mount point", target)
			}
			// docs/kubelet.md §1.1 (makePodDataDirs) and §1.5: directories the
			// kubelet makes, mode 0750.
			podDir := filepath.Join(root, "pods", s.podUID)
			for _, d := range []string{podDir, podDir + "/volumes", podDir + "/plugins", filepath.Dir(target)} {
				if st, err := os.Stat(d); err != nil || !st.IsDir() || st.Mode().Perm() != 0o750 {
					t.Errorf("%s: want a directory with mode 0750: %v %v", d, err, st)
				}
			}
			// docs/kubelet.md §1.6: the publish vol_data.json beside the target.
			pubData := map[string]string{
				"specVolID":           s.specName,
				"volumeHandle":        s.handle,
				"driverName":          refDriverName,
				"nodeName":            simNode,
				"volumeLifecycleMode": s.mode,
				"attachmentID":        attachmentName(s.handle, refDriverName, simNode),
			}
			if got, want := readFile(filepath.Join(filepath.Dir(target), "vol_data.json")), volDataJSON(pubData); got != want {
				t.Errorf("publish vol_data.json:\n got %q\nwant %q", got, want)
			}
			staging := stagingPath(root, refDriverName, s.handle)
			if s.staged {
				if !isMountPoint(staging) {
					t.Errorf("staging path %s is not a mount point; mounts under root: %v", staging, mountsUnder(root))
				}
				stData := map[string]string{"volumeHandle": s.handle, "driverName": refDriverName}
				if got, want := readFile(filepath.Join(filepath.Dir(staging), "vol_data.json")), volDataJSON(stData); got != want {
					t.Errorf("staging vol_data.json:\n got %q\nwant %q", got, want)
				}
			} else if _, err := os.Stat(filepath.Dir(staging)); err == nil {
				t.Errorf("inline volume: %s exists, but docs/kubelet.md §2 says MountDevice never runs for inline volumes", filepath.Dir(staging))
			}

			r := sim.wait(t, 30*time.Second)
			wantCode(t, r, 0)
			if r.Stderr != "" {
				t.Errorf("stderr not empty on success: %q", r.Stderr)
			}
			assertNothingLeft(t, root, work)
			// The summary reports nothing left by the driver.
			var lb struct {
				Mounts      []string `json:"mounts"`
				DriverPaths []string `json:"driver_paths"`
			}
			sum := summary(t, parseTrace(t, r))
			if err := json.Unmarshal(sum.LeftBehind, &lb); err != nil || len(lb.Mounts)+len(lb.DriverPaths) > 0 {
				t.Errorf("summary left_behind: %s (%v)", sum.LeftBehind, err)
			}
		})
	}
}

// TestRefDriverWithoutStaging: a driver without STAGE_UNSTAGE_VOLUME gets no
// NodeStage/NodeUnstage and NodePublish carries no staging_target_path
// (docs/kubelet.md §1.3, §11); MountDevice still creates an empty globalmount with no
// vol_data.json (docs/kubelet.md §1.5, §21.4) and asks for capabilities once (docs/kubelet.md §21.1).
func TestRefDriverWithoutStaging(t *testing.T) {
	for _, dir := range []string{"staged", "secrets"} {
		var s refSample
		for _, x := range refSamples {
			if x.dir == dir {
				s = x
			}
		}
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			drv := startRefDriver(t, work, "--stage-unstage=false")
			root := filepath.Join(work, "root")
			sim := startSim(t, "run", "-f", sample(t, s.dir), "--endpoint", "unix://"+drv.Sock,
				"--root-dir", root, "--node-name", simNode, "--hold", "2s", "--volume-stats-agg-period", "0", "-o", "json")

			target := targetPath(root, s.podUID, s.specName)
			waitMounted(t, target, 10*time.Second, sim.exited)
			staging := stagingPath(root, refDriverName, s.handle)
			if st, err := os.Stat(staging); err != nil || !st.IsDir() {
				t.Errorf("docs/kubelet.md §1.5: globalmount %s should exist as a directory without staging: %v", staging, err)
			} else if ents, _ := os.ReadDir(staging); len(ents) != 0 {
				t.Errorf("globalmount %s should be empty, has %d entries", staging, len(ents))
			}
			if isMountPoint(staging) {
				t.Errorf("globalmount %s is mounted although the driver does not stage", staging)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(staging), "vol_data.json")); err == nil {
				t.Errorf("docs/kubelet.md §1.6: no staging vol_data.json without STAGE_UNSTAGE_VOLUME")
			}

			r := sim.wait(t, 30*time.Second)
			wantCode(t, r, 0)
			cs := calls(parseTrace(t, r))
			for _, c := range cs {
				if c.Method == "NodeStageVolume" || c.Method == "NodeUnstageVolume" {
					t.Errorf("%s called on a driver without STAGE_UNSTAGE_VOLUME: %s", c.Method, c.Raw)
				}
				if c.Method == "NodePublishVolume" {
					if v, ok := c.Request["staging_target_path"]; ok {
						t.Errorf("NodePublishVolume has staging_target_path %v without STAGE_UNSTAGE_VOLUME", v)
					}
					if c.Request["target_path"] != target {
						t.Errorf("NodePublishVolume target_path %v, want %s", c.Request["target_path"], target)
					}
				}
			}
			want := []string{
				"GetPluginInfo", "NodeGetInfo",
				"NodeGetCapabilities",                                               // MountDevice: STAGE only
				"NodeGetCapabilities", "NodeGetCapabilities", "NodeGetCapabilities", // SetUp
				"NodePublishVolume",
				"NodeUnpublishVolume",
				// UnmountDevice: no vol_data.json in the staging dir, so no RPC (docs/kubelet.md §1.7)
			}
			if got := methods(cs); !reflect.DeepEqual(got, want) {
				t.Errorf("calls:\n got %v\nwant %v", got, want)
			}
			assertNothingLeft(t, root, work)
		})
	}
}

// callKey is what must be identical between `run` and `plan`.
type callKey struct {
	Component, Operation, Method, Asking string
	Request                              map[string]any
}

func callKeys(cs []traceLine) []callKey {
	var out []callKey
	for _, c := range cs {
		out = append(out, callKey{c.Component, c.Operation, c.Method, c.Asking, c.Request})
	}
	return out
}

// TestRunMatchesPlan: `plan`, told the driver's name, node ID and
// capabilities, produces the same calls with the same requests as `run`
// against that driver (`plan` is `run` against a driver answered from flags: one code path builds every request).
func TestRunMatchesPlan(t *testing.T) {
	cases := []struct {
		name, dir string
		drvArgs   []string
		wantCaps  []string // what the driver advertises (its --help: stage-unstage default true)
	}{
		{"inline", "inline", nil, []string{"GET_VOLUME_STATS", "STAGE_UNSTAGE_VOLUME"}},
		{"staged", "staged", nil, []string{"GET_VOLUME_STATS", "STAGE_UNSTAGE_VOLUME"}},
		{"attach", "attach", nil, []string{"GET_VOLUME_STATS", "STAGE_UNSTAGE_VOLUME"}},
		{"secrets", "secrets", nil, []string{"GET_VOLUME_STATS", "STAGE_UNSTAGE_VOLUME"}},
		{"staged-no-stage", "staged", []string{"--stage-unstage=false"}, []string{"GET_VOLUME_STATS"}},
		{"staged-snmw", "staged", []string{"--single-node-multi-writer"}, []string{"GET_VOLUME_STATS", "SINGLE_NODE_MULTI_WRITER", "STAGE_UNSTAGE_VOLUME"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			drv := startRefDriver(t, work, tc.drvArgs...)
			root := filepath.Join(work, "root")
			common := []string{"-f", sample(t, tc.dir), "--root-dir", root, "--node-name", simNode, "-o", "json", "--show-secrets"}

			run := runSim(t, append([]string{"run", "--endpoint", "unix://" + drv.Sock}, common...)...)
			wantCode(t, run, 0)
			assertNothingLeft(t, root, work)
			runCalls := calls(parseTrace(t, run))

			// What the driver reported, read from the run's trace.
			var driverName, nodeID string
			var caps []string
			for _, c := range runCalls {
				switch c.Method {
				case "GetPluginInfo":
					driverName, _ = c.Response["name"].(string)
				case "NodeGetInfo":
					nodeID, _ = c.Response["node_id"].(string)
				case "NodeGetCapabilities":
					if caps == nil {
						caps = capabilityNames(c.Response)
					}
				}
			}
			if driverName != refDriverName || nodeID != "ref-node-id" {
				t.Fatalf("driver reported name %q node_id %q, want %q %q", driverName, nodeID, refDriverName, "ref-node-id")
			}
			if !reflect.DeepEqual(caps, tc.wantCaps) {
				t.Fatalf("driver capabilities %v, want %v", caps, tc.wantCaps)
			}

			plan := runSim(t, append([]string{"plan", "--driver-name", driverName, "--node-id", nodeID,
				"--node-capabilities", strings.Join(caps, ",")}, common...)...)
			wantCode(t, plan, 0)
			assertNothingLeft(t, root, work)
			planCalls := calls(parseTrace(t, plan))

			rk, pk := callKeys(runCalls), callKeys(planCalls)
			if len(rk) != len(pk) {
				t.Errorf("run made %d calls %v, plan %d %v", len(rk), methods(runCalls), len(pk), methods(planCalls))
			}
			for i := 0; i < len(rk) && i < len(pk); i++ {
				if ok, diff := jsonEqual(pk[i], rk[i]); !ok {
					t.Errorf("call %d (%s/%s/%s) differs, plan vs run:\n%s", i+1, rk[i].Component, rk[i].Operation, rk[i].Method, diff)
				}
			}
		})
	}
}

// treeOf lists every path under dir (relative), sorted.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExistingRootDirKept: an existing --root-dir is kept, with everything
// that was in it (docs/safety.md: only what the run created is
// removed), including pod directories of other pods; and the trace does not
// claim to remove what it leaves.
func TestExistingRootDirKept(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	for _, d := range []string{"pods/other-pod/volumes", "pods/empty-pod", "plugins/kubernetes.io/csi/" + refDriverName + "/keep", "plugins_registry"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, root, "marker", "x")
	before := treeOf(t, root)

	r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "-o", "json", "-v")
	wantCode(t, r, 0)
	if after := treeOf(t, root); !reflect.DeepEqual(after, before) {
		t.Errorf("root dir changed:\nbefore %q\nafter  %q", before, after)
	}
	if ms := mountsUnder(root); len(ms) > 0 {
		t.Errorf("still mounted: %v", ms)
	}
	for _, l := range parseTrace(t, r) {
		if l.Kind != "step" {
			continue
		}
		for _, prefix := range []string{"removed ", "housekeeping: removing orphaned pod dir "} {
			if p, ok := strings.CutPrefix(l.Text, prefix); ok {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("the trace says %q, but %s is still there (it existed before the run)", l.Text, p)
				}
			}
		}
	}
}

// TestRootDirParentsRemoved: a --root-dir whose parents do not exist either:
// the run creates them, so it removes them (docs/safety.md: every directory
// the simulator creates is journaled the moment it is made).
func TestRootDirParentsRemoved(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work)
	top := filepath.Join(work, "a")
	root := filepath.Join(top, "b", "root")
	r := runSim(t, "run", "-f", sample(t, "inline"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode)
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)
	if _, err := os.Lstat(top); err == nil {
		t.Errorf("%s (created by the run as a parent of --root-dir) left behind: %v", top, treeOf(t, top))
	}
}
