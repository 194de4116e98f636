package e2e

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/mocklog"
)

// conformanceScenarios is every scenario `conformance` knows, in its order.
var conformanceScenarios = []string{
	"registration/node-info",
	"lifecycle/persistent",
	"lifecycle/ephemeral",
	"podinfo/on-mount",
	"tokens/volume-context",
	"tokens/secrets",
	"republish/same-mount",
	"selinux/context-mount",
	"fsgroup/volume-mount-group",
	"attach/publish-context",
	"lifecycle/block",
	"expansion/node",
	"node/stage-idempotent",
	"node/publish-idempotent",
	"node/unpublish-removes-target",
	"node/unpublish-idempotent",
	"node/unstage-idempotent",
	"node/invalid-argument/NodeStageVolume",
	"node/invalid-argument/NodePublishVolume",
	"node/invalid-argument/NodeUnpublishVolume",
	"node/invalid-argument/NodeUnstageVolume",
	"timing/half-timeout",
}

// stageScenarios need STAGE_UNSTAGE_VOLUME.
var stageScenarios = []string{
	"node/stage-idempotent", "node/unstage-idempotent",
	"node/invalid-argument/NodeStageVolume", "node/invalid-argument/NodeUnstageVolume",
}

// hostSELinux: the context= option can take effect on this host.
func hostSELinux() bool {
	fi, err := os.Stat("/sys/fs/selinux")
	return err == nil && fi.IsDir()
}

// confScenario is one `-o json` scenario object.
type confScenario struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Status   string `json:"status"`
	Message  string `json:"message"`
	Failures []struct {
		Did     string `json:"did"`
		Needed  string `json:"needed"`
		Section string `json:"section"`
	} `json:"failures"`
	Notes           []string `json:"notes"`
	Calls           int      `json:"calls"`
	KubeletSpecific bool     `json:"kubelet_specific"`
}

// confSummary is the `-o json` summary object.
type confSummary struct {
	Kind                  string  `json:"kind"`
	Passed                int     `json:"passed"`
	Failed                int     `json:"failed"`
	Skipped               int     `json:"skipped"`
	KubeletSpecificChecks int     `json:"kubelet_specific_checks"`
	Calls                 int     `json:"calls"`
	DurationMS            float64 `json:"duration_ms"`
	Result                string  `json:"result"`
	CSIDriver             *string `json:"csidriver"`
	Volume                *struct {
		Handle      string `json:"handle"`
		Created     bool   `json:"created"`
		Description string `json:"description"`
		Error       string `json:"error"`
	} `json:"volume"`
}

// confRun is one finished `conformance -o json --junit` run.
type confRun struct {
	sim       simResult
	scenarios map[string]confScenario
	order     []string
	summary   confSummary
	junit     junitDoc
}

// junitDoc is read with a reader written from the JUnit schema, not from
// the simulator's types.
type junitDoc struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Time    string `xml:"time,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// runConformance runs `csi-kubelet-sim conformance` with -o json and
// --junit, and checks what every run must show: JSON lines, a JUnit file
// that parses with one test case per scenario, and nothing left under the
// root dir.
func runConformance(t testing.TB, work, sock string, args ...string) confRun {
	t.Helper()
	root := filepath.Join(work, "root")
	junit := filepath.Join(work, "junit.xml")
	all := append([]string{"conformance", "--endpoint", "unix://" + sock, "--root-dir", root, "--node-name", simNode,
		"-o", "json", "--junit", junit}, args...)
	r := runSim(t, all...)
	run := confRun{sim: r, scenarios: map[string]confScenario{}}
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var kind struct{ Kind string }
		if err := json.Unmarshal(line, &kind); err != nil {
			t.Fatalf("stdout line is not JSON (%v): %q\n%s", err, line, r)
		}
		switch kind.Kind {
		case "scenario":
			var s confScenario
			if err := json.Unmarshal(line, &s); err != nil {
				t.Fatal(err)
			}
			run.scenarios[s.Name] = s
			run.order = append(run.order, s.Name)
		case "summary":
			if err := json.Unmarshal(line, &run.summary); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("unexpected JSON object kind %q: %s", kind.Kind, line)
		}
	}
	if run.summary.Kind != "summary" {
		t.Fatalf("no summary line\n%s", r)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatalf("junit: %v\n%s", err, r)
	}
	if err := xml.Unmarshal(data, &run.junit); err != nil {
		t.Fatalf("the JUnit file does not parse: %v\n%s", err, data)
	}
	if len(run.junit.Suites) != 1 || run.junit.Suites[0].Name != "csi-kubelet-sim conformance" {
		t.Fatalf("JUnit: want one testsuite named %q, got %+v", "csi-kubelet-sim conformance", run.junit.Suites)
	}
	suite := run.junit.Suites[0]
	var cases []string
	for _, c := range suite.Cases {
		cases = append(cases, c.Name)
		s := run.scenarios[c.Name]
		switch {
		case s.Status == "fail" && (c.Failure == nil || c.Failure.Message == ""):
			t.Errorf("JUnit %s: no <failure message=...> for a failed scenario", c.Name)
		case s.Status == "skip" && (c.Skipped == nil || c.Skipped.Message != s.Message):
			t.Errorf("JUnit %s: <skipped> %+v, want the reason %q", c.Name, c.Skipped, s.Message)
		case s.Status == "pass" && (c.Failure != nil || c.Skipped != nil):
			t.Errorf("JUnit %s: passed, but has failure or skipped", c.Name)
		}
	}
	if !slices.Equal(cases, run.order) || suite.Tests != len(run.order) || suite.Failures != run.summary.Failed || suite.Skipped != run.summary.Skipped {
		t.Errorf("JUnit cases %v (tests %d, failures %d, skipped %d) do not match the scenarios %v (failed %d, skipped %d)",
			cases, suite.Tests, suite.Failures, suite.Skipped, run.order, run.summary.Failed, run.summary.Skipped)
	}
	assertNothingLeft(t, root, work)
	return run
}

// statuses returns the names with each status.
func (c confRun) statuses() (pass, fail, skip []string) {
	for _, n := range c.order {
		switch c.scenarios[n].Status {
		case "pass":
			pass = append(pass, n)
		case "fail":
			fail = append(fail, n)
		case "skip":
			skip = append(skip, n)
		}
	}
	return pass, fail, skip
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func sameSet(a, b []string) bool { return slices.Equal(sortedCopy(a), sortedCopy(b)) }

// refCSIDriver turns on everything the reference driver can do: both
// lifecycle modes, pod info, tokens (in volume_context), republish, the
// SELinux mount option; no attach (it has no PUBLISH_UNPUBLISH_VOLUME).
const refCSIDriver = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: ref.csi.kubelet-sim.io
spec:
  attachRequired: false
  podInfoOnMount: true
  volumeLifecycleModes: [Persistent, Ephemeral]
  tokenRequests:
    - audience: vault
    - audience: ""
      expirationSeconds: 3600
  requiresRepublish: true
  seLinuxMount: true
`

// TestConformanceRefDriver: against the reference driver every scenario
// passes or is skipped with its reason, with a CSIDriver object and
// without, with and without STAGE_UNSTAGE_VOLUME; nothing is left under
// the root dir, and nothing in the driver's data dir (the volume made by
// CreateVolume is deleted again).
func TestConformanceRefDriver(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir; mostly waiting on the driver
	for _, stage := range []bool{true, false} {
		for _, withObject := range []bool{true, false} {
			name := fmt.Sprintf("stage-unstage=%v/csidriver=%v", stage, withObject)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				work := workDir(t)
				drv := startRefDriver(t, work, fmt.Sprintf("--stage-unstage=%v", stage))
				var args []string
				// Skipped, and why: the reference driver has no
				// VOLUME_MOUNT_GROUP and no PUBLISH_UNPUBLISH_VOLUME.
				// No definition declares block (docs/kubelet.md §18), no node
				// EXPAND_VOLUME (§15.1).
				wantSkip := []string{"fsgroup/volume-mount-group", "attach/publish-context", "lifecycle/block", "expansion/node"}
				if withObject {
					args = append(args, "-f", writeFile(t, work, "csidriver.yaml", refCSIDriver))
					// Tokens go to volume_context (serviceAccountTokenInSecrets unset).
					wantSkip = append(wantSkip, "tokens/secrets")
					if !hostSELinux() {
						wantSkip = append(wantSkip, "selinux/context-mount")
					}
				} else {
					// Without a CSIDriver the kubelet sends no pod info
					// and no tokens, never republishes or mounts with
					// context=, and refuses inline volumes.
					wantSkip = append(wantSkip, "lifecycle/ephemeral", "podinfo/on-mount", "tokens/volume-context",
						"tokens/secrets", "republish/same-mount", "selinux/context-mount")
				}
				if !stage {
					wantSkip = append(wantSkip, stageScenarios...)
				}
				c := runConformance(t, work, drv.Sock, args...)
				if !slices.Equal(c.order, conformanceScenarios) {
					t.Errorf("scenarios %v, want %v", c.order, conformanceScenarios)
				}
				pass, fail, skip := c.statuses()
				if withObject && hostSELinux() {
					// The reference driver bind-mounts: a bind mount
					// drops the context= option (docs/kubelet.md §6.3).
					if !slices.Equal(fail, []string{"selinux/context-mount"}) {
						t.Errorf("on an SELinux host only selinux/context-mount should fail, got %v", fail)
					}
				} else if len(fail) > 0 {
					for _, n := range fail {
						t.Errorf("%s failed: %s", n, c.scenarios[n].Message)
					}
				}
				if !sameSet(skip, wantSkip) {
					t.Errorf("skipped %v, want %v", skip, wantSkip)
				}
				for _, n := range skip {
					if m := c.scenarios[n].Message; !strings.Contains(m, "docs/kubelet.md") && !strings.Contains(m, "no SELinux") {
						t.Errorf("%s: skip reason %q gives no docs/kubelet.md section", n, m)
					}
				}
				if len(pass)+len(fail)+len(skip) != len(conformanceScenarios) {
					t.Errorf("%d results, want %d", len(pass)+len(fail)+len(skip), len(conformanceScenarios))
				}
				wantCode(t, c.sim, map[bool]int{true: 0, false: 1}[len(fail) == 0])
				if v := c.summary.Volume; v == nil || !v.Created || v.Error != "" || !strings.Contains(v.Description, "CreateVolume") {
					t.Errorf("volume %+v: want one made by CreateVolume and deleted", v)
				}
				if s := c.scenarios["selinux/context-mount"]; withObject && !hostSELinux() && !strings.Contains(s.Message, `mount_flags context="system_u:object_r:container_file_t:s0:c1,c2"`) {
					t.Errorf("selinux: %q should say which option the driver accepted", s.Message)
				}
				if withObject {
					notes := strings.Join(c.scenarios["republish/same-mount"].Notes, "\n")
					if !strings.Contains(notes, "same mount before and after the republish") || !strings.Contains(notes, "still there after it") {
						t.Errorf("republish notes %q", notes)
					}
				}
				drv.Stop()
				if left, _ := os.ReadDir(filepath.Join(work, "refdata")); len(left) > 0 {
					t.Errorf("left in the driver's data dir: %v", left)
				}
			})
		}
	}
}

// mockCSIDriver declares more than the mock does well.
const mockCSIDriver = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: io.kubernetes.storage.mock
spec:
  attachRequired: true
  podInfoOnMount: true
  volumeLifecycleModes: [Persistent, Ephemeral]
  tokenRequests:
    - audience: vault
  serviceAccountTokenInSecrets: true
  requiresRepublish: true
  seLinuxMount: true
`

// TestConformanceMockDriver runs conformance against the Kubernetes e2e
// mock driver (e2e/mockdriver/README.md), which keeps its volumes in memory
// and mounts nothing: NodePublishVolume makes the target with os.Mkdir (for
// persistent volumes only) and NodeUnpublishVolume os.RemoveAll's it; it
// knows only the volume ids it created.
func TestConformanceMockDriver(t *testing.T) {
	t.Run("attach-volume-mount-group", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		drv := startMock(t, work, "--volume-mount-group", "--enable-topology")
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", mockCSIDriver))
		wantCode(t, c.sim, 1)
		_, fail, skip := c.statuses()

		// What the mock fails, and why:
		//  - lifecycle/ephemeral: for an inline volume its NodePublishVolume
		//    answers OK without creating the target (it only does so for
		//    persistent volumes), so the container runtime would have
		//    nothing to bind-mount (docs/kubelet.md §1.5: the kubelet makes only
		//    the target's parent).
		//  - podinfo/on-mount: the same, for the pod's inline volume (the
		//    pod has one volume per lifecycle mode the CSIDriver allows).
		//  - fsgroup/volume-mount-group: it advertises VOLUME_MOUNT_GROUP
		//    but ignores volume_mount_group: the target it makes is
		//    root:root 0755, so the pod's group (gid 4242, non-root uid)
		//    cannot write, and the kubelet, having delegated, does not
		//    change the group itself (docs/kubelet.md §7.1).
		wantFail := map[string][]string{
			"lifecycle/ephemeral": {`NodePublishVolume of the ephemeral volume "conformance-inline" returned OK but the target`, "does not exist", "(docs/kubelet.md §1.5)"},
			"podinfo/on-mount":    {`NodePublishVolume of the ephemeral volume "conformance-inline" returned OK but the target`, "does not exist"},
			"fsgroup/volume-mount-group": {`NodePublishVolume got volume_mount_group "4242", but a process with gid 4242 (uid 65534, no other groups) cannot create a file in the target (owner 0:0, mode drwxr-xr-x)`,
				"Permission denied", "(docs/kubelet.md §7.1)"},
		}
		// Everything else passes: it creates volumes ("4"), publishes them
		// with publish_context {"device": "/dev/mock", ...} (attach), takes
		// pod info and tokens, republishes idempotently (nothing mounted,
		// the file written into the target survives), answers every repeat
		// with OK, checks every required field, removes the target on
		// unpublish, and its topology is a valid label.
		// Tokens go to secrets; no definition declares block; the mock has
		// no node EXPAND_VOLUME.
		wantSkip := []string{"tokens/volume-context", "lifecycle/block", "expansion/node"}
		if hostSELinux() {
			wantFail["selinux/context-mount"] = []string{"is not a mount point, so the option was not applied"}
		} else {
			wantSkip = append(wantSkip, "selinux/context-mount")
		}
		if !sameSet(fail, slices.Collect(mapsKeys(wantFail))) {
			t.Errorf("failed %v, want exactly %v", fail, sortedCopy(slices.Collect(mapsKeys(wantFail))))
		}
		for name, wants := range wantFail {
			for _, w := range wants {
				if m := c.scenarios[name].Message; !strings.Contains(m, w) {
					t.Errorf("%s: message %q does not contain %q", name, m, w)
				}
			}
		}
		if !sameSet(skip, wantSkip) {
			t.Errorf("skipped %v, want %v", skip, wantSkip)
		}
		if notes := strings.Join(c.scenarios["attach/publish-context"].Notes, "\n"); !strings.Contains(notes, "/dev/mock") {
			t.Errorf("attach notes %q should show the mock's publish_context", notes)
		}
		if notes := strings.Join(c.scenarios["republish/same-mount"].Notes, "\n"); !strings.Contains(notes, "not a mount point before or after") {
			t.Errorf("republish notes %q", notes)
		}
		if v := c.summary.Volume; v == nil || !v.Created || v.Error != "" {
			t.Errorf("volume %+v: want one made by CreateVolume and deleted", v)
		}

		// The mock saw the external components' calls: a DeleteVolume
		// for each CreateVolume (one for the run, up to seven more for
		// scenarios running side by side), and a ControllerUnpublishVolume
		// for every ControllerPublishVolume.
		drv.Stop()
		f, err := os.Open(drv.Log)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		calls, err := mocklog.Parse(f)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, c := range calls {
			count[c.Method]++
		}
		if n := count["CreateVolume"]; n < 1 || n > 8 || count["DeleteVolume"] != n || count["ControllerPublishVolume"] == 0 || count["ControllerPublishVolume"] != count["ControllerUnpublishVolume"] {
			t.Errorf("mock calls %v: want 1 to 8 CreateVolume, as many DeleteVolume, as many ControllerUnpublishVolume as ControllerPublishVolume", count)
		}
		// The summary counts what the driver received: the probe, the
		// volume's CreateVolume and DeleteVolume and every scenario's
		// calls (issue 11: it once said 171 where the driver got 178).
		if c.summary.Calls != len(calls) {
			t.Errorf("summary counts %d calls, the mock logged %d", c.summary.Calls, len(calls))
		}
	})

	t.Run("pre-provisioned-handle", func(t *testing.T) {
		t.Parallel()
		work := workDir(t)
		// No attach: the node calls need no publish_context.
		drv := startMock(t, work, "--disable-attach")
		obj := strings.NewReplacer("attachRequired: true", "attachRequired: false",
			"[Persistent, Ephemeral]", "[Persistent]").Replace(mockCSIDriver)
		c := runConformance(t, work, drv.Sock, "-f", writeFile(t, work, "csidriver.yaml", obj),
			"--volume-handle", "csi-kubelet-sim-conformance")
		wantCode(t, c.sim, 1)
		pass, fail, _ := c.statuses()
		// The mock knows only the volumes it created: a pre-provisioned
		// handle gets NotFound from NodeStageVolume, so every scenario
		// that mounts the PV fails there. Only those that mount nothing
		// pass.
		if !sameSet(pass, []string{"registration/node-info", "timing/half-timeout"}) {
			t.Errorf("passed %v, want only registration/node-info and timing/half-timeout", pass)
		}
		for _, n := range fail {
			m := c.scenarios[n].Message
			if !strings.Contains(m, `NodeStageVolume for the persistent volume "conformance-pv" returned NotFound: csi-kubelet-sim-conformance`) || !strings.Contains(m, "(docs/kubelet.md §11)") {
				t.Errorf("%s: %q", n, m)
			}
		}
		if v := c.summary.Volume; v == nil || v.Created || v.Handle != "csi-kubelet-sim-conformance" {
			t.Errorf("volume %+v: want the pre-provisioned handle, no CreateVolume", v)
		}
	})
}

func mapsKeys(m map[string][]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestConformanceText: the text output for people, and the exit code.
func TestConformanceText(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	r := runSim(t, "conformance", "--endpoint", drv.Sock, "--root-dir", root, "--node-name", simNode, "--skip", "invalid-argument")
	wantCode(t, r, 0)
	for _, want := range []string{
		"csi-kubelet-sim conformance: driver ref.csi.kubelet-sim.io",
		"PASS  lifecycle/persistent",
		"SKIP  lifecycle/ephemeral",
		"4 not selected by --focus/--skip",
		"volume      created by CreateVolume",
		"result      PASS",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout does not contain %q\n%s", want, r)
		}
	}
	assertNothingLeft(t, root, work)
}

// sanityKubelet matches csi-sanity specs that check something only a
// kubelet asks of a driver.
var sanityKubelet = regexp.MustCompile(`(?i)pod.?info|service.?account|republish|selinux|volume.?mount.?group|fsgroup|volume.?attachment|publish.?context|node label|kubelet`)

// BenchmarkConformanceVsSanity runs, in one run against one reference
// driver, `conformance` (with a CSIDriver turning on everything the driver
// does) and csi-sanity's node suite, and reports each one's time and how
// many kubelet-specific checks each made. x-sanity is the wall-time ratio
// of conformance to csi-sanity (the goal: at most 1.0); the two alternate,
// so that the noise of a shared machine hits both.
func BenchmarkConformanceVsSanity(b *testing.B) {
	sanity := binary(b, "CSI_SANITY", "csi-sanity")
	work := benchWorkDir(b)
	drv := startRefDriver(b, work)
	csidriver := writeFile(b, work, "csidriver.yaml", refCSIDriver)
	var confTime, sanityTime time.Duration
	var confKubelet, confRan, confCalls, sanityKubeletN, sanityRan int
	for i := 0; i < b.N; i++ {
		start := time.Now()
		c := runConformance(b, work, drv.Sock, "-f", csidriver)
		confTime += time.Since(start)
		if c.sim.Code != 0 {
			b.Fatalf("conformance failed\n%s", c.sim)
		}
		confKubelet, confRan, confCalls = c.summary.KubeletSpecificChecks, c.summary.Passed+c.summary.Failed, c.summary.Calls

		dir := filepath.Join(work, fmt.Sprintf("sanity-%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		report := filepath.Join(dir, "junit.xml")
		cmd := exec.Command(sanity, "--csi.endpoint="+drv.Sock, "--csi.mountdir="+filepath.Join(dir, "mnt"),
			"--csi.stagingdir="+filepath.Join(dir, "stg"), "--ginkgo.focus", "Node", "--ginkgo.no-color",
			"--ginkgo.junit-report", report)
		start = time.Now()
		out, err := cmd.CombinedOutput()
		sanityTime += time.Since(start)
		if err != nil {
			b.Fatalf("csi-sanity: %v\n%s", err, out)
		}
		sanityKubeletN, sanityRan = countSanity(b, report)
	}
	b.ReportMetric(float64(confTime.Milliseconds())/float64(b.N), "conformance-ms/op")
	b.ReportMetric(float64(sanityTime.Milliseconds())/float64(b.N), "sanity-ms/op")
	b.ReportMetric(ratio(confTime, sanityTime), "x-sanity")
	b.ReportMetric(float64(confRan), "conformance-checks-run")
	b.ReportMetric(float64(confKubelet), "conformance-kubelet-checks")
	b.ReportMetric(float64(confCalls), "conformance-driver-calls")
	b.ReportMetric(float64(sanityRan), "sanity-specs-run")
	b.ReportMetric(float64(sanityKubeletN), "sanity-kubelet-checks")
}

// countSanity reads csi-sanity's JUnit report: the specs it ran (not
// skipped) and those of them that are kubelet-specific.
func countSanity(b *testing.B, report string) (kubelet, ran int) {
	data, err := os.ReadFile(report)
	if err != nil {
		b.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Status  string    `xml:"status,attr"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		b.Fatal(err)
	}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Skipped != nil || c.Status == "skipped" || c.Status == "pending" {
				continue
			}
			ran++
			if sanityKubelet.MatchString(c.Name) {
				kubelet++
			}
		}
	}
	return kubelet, ran
}
