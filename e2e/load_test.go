package e2e

// `load` against the reference driver and the Kubernetes e2e mock driver:
// what a user checks after a load run (nothing left behind, the exit code,
// the report's fields), and that the kubelet's concurrency really happens
// (calls in flight at once, one pending operation per volume, pods arriving
// at --qps, churn with flat memory).

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// loadRun runs `load -o json` of the given manifests against sock.
func loadRun(t *testing.T, work, sock, manifests string, args ...string) (simResult, loadSummary, string) {
	t.Helper()
	root := filepath.Join(work, "root")
	all := append([]string{"load", "-f", manifests, "--endpoint", "unix://" + sock, "--root-dir", root,
		"--node-name", simNode, "-o", "json"}, args...)
	r := runSim(t, all...)
	if strings.Count(strings.TrimSpace(r.Stdout), "\n") != 0 {
		t.Errorf("load -o json printed more than the one summary line:\n%s", r)
	}
	return r, loadSummaryOf(t, r.Stdout), root
}

// assertLoadClean: nothing mounted, no root dir, no loop device over a
// file of the test, and the summary says so.
func assertLoadClean(t *testing.T, s loadSummary, root, work string) {
	t.Helper()
	assertNothingLeft(t, root, work)
	if ls := fltLoopsUnder(work); len(ls) > 0 {
		t.Errorf("loop devices left: %v", ls)
	}
	if !s.LeftBehind.Clean {
		t.Errorf("the summary's left_behind is not clean")
	}
}

// wantMethodCalls checks the per-method counts of the report.
func wantMethodCalls(t *testing.T, s loadSummary, want map[string]int) {
	t.Helper()
	for m, n := range want {
		if got := s.method(t, m).Calls; got != n {
			t.Errorf("%s: %d calls in the report, want %d", m, got, n)
		}
	}
}

// TestLoadRefDriver: 20 pods of the staged sample, each with its own
// volume, against the reference driver whose NodePublishVolume takes
// 100 ms: all mounted and torn down, nothing left, and the report has what
// docs the user reads it for.
func TestLoadRefDriver(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work, "--fault", "NodePublishVolume=hang:100ms")
	html := filepath.Join(work, "report.html")
	r, s, root := loadRun(t, work, drv.Sock, sample(t, "staged"), "--replicas", "19", "--report", html)
	wantCode(t, r, 0)
	if s.Pods != 20 || s.FailedPods != 0 || s.Result != "OK" || s.ExitCode != 0 {
		t.Errorf("pods %d failed %d result %q exit %d, want 20, 0, OK, 0", s.Pods, s.FailedPods, s.Result, s.ExitCode)
	}
	wantMethodCalls(t, s, map[string]int{"NodeGetInfo": 1, "NodeStageVolume": 20, "NodePublishVolume": 20,
		"NodeUnpublishVolume": 20, "NodeUnstageVolume": 20})
	for _, m := range s.Load.Methods {
		if len(m.Errors) != 0 || m.TimedOut != 0 {
			t.Errorf("%s: errors %v, timed out %d, want none", m.Method, m.Errors, m.TimedOut)
		}
		l := m.LatencyMS
		if !(l["min"] > 0 && l["min"] <= l["p50"] && l["p50"] <= l["p90"] && l["p90"] <= l["p99"] && l["p99"] <= l["max"]) {
			t.Errorf("%s: latency %v, want 0 < min <= p50 <= p90 <= p99 <= max", m.Method, l)
		}
		if m.CallsPerSecond <= 0 || m.MaxInFlight < 1 {
			t.Errorf("%s: %v calls/s, %d max in flight, want both positive", m.Method, m.CallsPerSecond, m.MaxInFlight)
		}
	}
	pub := s.method(t, "NodePublishVolume")
	if pub.LatencyMS["p50"] < 100 {
		t.Errorf("NodePublishVolume p50 %v ms, but each call sleeps 100 ms in the driver", pub.LatencyMS["p50"])
	}
	// Concurrency: the reconciler starts the 20 volumes' mounts side by
	// side, so several publishes sleep in the driver at once.
	if pub.MaxInFlight < 2 {
		t.Errorf("NodePublishVolume max in flight %d: the pods' volumes were not mounted concurrently", pub.MaxInFlight)
	}
	if p := s.Load.Process; p.CPUSeconds <= 0 || p.PeakRSSBytes < 1<<20 {
		t.Errorf("process cpu %v s, peak RSS %d bytes: want the simulator's own cost", p.CPUSeconds, p.PeakRSSBytes)
	}
	// The HTML report holds the run's calls: the volumes' lanes (the
	// input's PV and the last copy's) and every method.
	page := readFile(html)
	if !strings.HasPrefix(strings.TrimSpace(strings.ToLower(page)), "<!doctype html") {
		t.Errorf("%s is not an HTML page: %.100q", html, page)
	}
	for _, want := range []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume", "pv-data", "pv-data-r19"} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML report does not contain %q", want)
		}
	}
	if m := regexp.MustCompile(`(?i)(src|href)="?(https?:)?//`).FindString(page); m != "" {
		t.Errorf("the HTML report loads something from the network: %s", m)
	}
	assertLoadClean(t, s, root, work)
}

// TestLoadFailingPublish: the first 3 NodePublishVolume calls fail with
// Internal: 3 of 10 pods fail (one attempt each), exit 1, the errors are
// counted by code, and the failed pods' staged volumes are still torn down.
func TestLoadFailingPublish(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work, "--fault", "NodePublishVolume=Internal:3")
	r, s, root := loadRun(t, work, drv.Sock, sample(t, "staged"), "--replicas", "9")
	wantCode(t, r, 1)
	if s.Pods != 10 || s.FailedPods != 3 || s.ExitCode != 1 {
		t.Errorf("pods %d, failed %d, exit_code %d: want 10, 3, 1", s.Pods, s.FailedPods, s.ExitCode)
	}
	pub := s.method(t, "NodePublishVolume")
	if pub.Calls != 10 || len(pub.Errors) != 1 || pub.Errors["Internal"] != 3 {
		t.Errorf("NodePublishVolume: %d calls, errors %v; want 10 calls, {Internal: 3}", pub.Calls, pub.Errors)
	}
	wantMethodCalls(t, s, map[string]int{"NodeStageVolume": 10, "NodeUnpublishVolume": 7, "NodeUnstageVolume": 10})
	assertLoadClean(t, s, root, work)
}

// driverCall is one call in the reference driver's log: when it came and
// when it was answered, as the driver saw it.
type driverCall struct {
	method, volume string
	start, end     time.Time
}

var (
	refCallStart = regexp.MustCompile(`^csi-refdriver: (\S+ \S+) call #(\d+) /csi\.v1\.\w+/(\w+) request: (.*)$`)
	refCallEnd   = regexp.MustCompile(`^csi-refdriver: (\S+ \S+) call #(\d+) /csi\.v1\.\w+/\w+ done`)
	refVolumeID  = regexp.MustCompile(`"volume_id":"([^"]*)"`)
)

// refDriverCalls reads the reference driver's log (-v 2 logs each call's
// request and its end).
func refDriverCalls(t *testing.T, logf string) []driverCall {
	t.Helper()
	f, err := os.Open(logf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byNum := map[string]*driverCall{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	parse := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006/01/02 15:04:05.000000", s, time.Local)
		if err != nil {
			t.Fatalf("driver log time %q: %v", s, err)
		}
		return tm
	}
	for sc.Scan() {
		line := sc.Text()
		if m := refCallStart.FindStringSubmatch(line); m != nil {
			c := &driverCall{method: m[3], start: parse(m[1])}
			if v := refVolumeID.FindStringSubmatch(m[4]); v != nil {
				c.volume = v[1]
			}
			byNum[m[2]] = c
			order = append(order, m[2])
		} else if m := refCallEnd.FindStringSubmatch(line); m != nil {
			if c := byNum[m[2]]; c != nil {
				c.end = parse(m[1])
			}
		}
	}
	var out []driverCall
	for _, n := range order {
		c := *byNum[n]
		if c.end.IsZero() {
			t.Errorf("driver call #%s %s has no end in the log", n, c.method)
		}
		out = append(out, c)
	}
	return out
}

func callsOf(cs []driverCall, method, volume string) []driverCall {
	var out []driverCall
	for _, c := range cs {
		if c.method == method && (volume == "" || c.volume == volume) {
			out = append(out, c)
		}
	}
	return out
}

// TestLoadSharedVolumes: 8 pods running together on the staged sample's one volume
// (--shared-volumes), NodeStageVolume taking 300 ms. The volume is staged
// once; no pod's NodePublishVolume overlaps the NodeStageVolume of the
// volume (MountVolume of a device-mountable plugin holds the whole volume's
// operation key), and it is unstaged once, after the last unpublish.
func TestLoadSharedVolumes(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work, "-v", "2", "--fault", "NodeStageVolume=hang:300ms")
	// Each pod runs 1.5 s, so that all are mounted before the first is
	// torn down (pods coming one after another would each stage anew).
	r, s, root := loadRun(t, work, drv.Sock, sample(t, "staged"), "--replicas", "7", "--shared-volumes", "--duration", "1500ms")
	wantCode(t, r, 0)
	drv.Stop()
	wantMethodCalls(t, s, map[string]int{"NodeStageVolume": 1, "NodePublishVolume": 8, "NodeUnpublishVolume": 8, "NodeUnstageVolume": 1})
	cs := refDriverCalls(t, drv.Log)
	const vol = "vol-data-1"
	stage, unstage := callsOf(cs, "NodeStageVolume", vol), callsOf(cs, "NodeUnstageVolume", vol)
	if len(stage) != 1 || len(unstage) != 1 {
		t.Fatalf("the driver saw %d NodeStageVolume and %d NodeUnstageVolume of %s, want one each", len(stage), len(unstage), vol)
	}
	pubs := callsOf(cs, "NodePublishVolume", vol)
	if len(pubs) != 8 {
		t.Fatalf("the driver saw %d NodePublishVolume of %s, want 8", len(pubs), vol)
	}
	for _, p := range pubs {
		if p.start.Before(stage[0].end) {
			t.Errorf("a NodePublishVolume started at %s, before the NodeStageVolume of its volume ended at %s",
				p.start.Format(time.StampMicro), stage[0].end.Format(time.StampMicro))
		}
	}
	for _, u := range callsOf(cs, "NodeUnpublishVolume", vol) {
		if unstage[0].start.Before(u.end) {
			t.Errorf("NodeUnstageVolume started at %s, before a NodeUnpublishVolume ended at %s",
				unstage[0].start.Format(time.StampMicro), u.end.Format(time.StampMicro))
		}
	}
	assertLoadClean(t, s, root, work)
}

// TestLoadQPS: 10 pods at --qps 10 --burst 2 arrive over 0.8 s after
// registration (two at once, then one every 100 ms): the last pod's
// NodePublishVolume cannot start before then.
func TestLoadQPS(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work, "-v", "2")
	r, s, root := loadRun(t, work, drv.Sock, sample(t, "staged"), "--replicas", "9", "--qps", "10", "--burst", "2")
	wantCode(t, r, 0)
	drv.Stop()
	assertLoadClean(t, s, root, work)
	cs := refDriverCalls(t, drv.Log)
	reg := callsOf(cs, "NodeGetInfo", "")
	var starts []time.Time
	for _, c := range callsOf(cs, "NodePublishVolume", "") {
		starts = append(starts, c.start)
	}
	if len(reg) != 1 || len(starts) != 10 {
		t.Fatalf("%d NodeGetInfo and %d NodePublishVolume calls, want 1 and 10", len(reg), len(starts))
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	if d := starts[9].Sub(reg[0].end); d < 800*time.Millisecond {
		t.Errorf("the last pod's NodePublishVolume came %v after registration; at --qps 10 --burst 2 the 10th pod arrives 0.8 s after it", d)
	}
}

// TestLoadChurn: --duration with --churn creates and deletes pods while
// the run lasts; every churned pod is mounted and torn down, and the peak
// RSS of a run three times longer stays flat.
func TestLoadChurn(t *testing.T) {
	t.Parallel()
	churn := func(d time.Duration) loadSummary {
		work := workDir(t)
		drv := startRefDriver(t, work)
		r, s, root := loadRun(t, work, drv.Sock, sample(t, "staged"), "--duration", d.String(), "--churn", "20",
			"--churn-lifetime", "200ms", "--sync-frequency", "300ms", "--volume-stats-agg-period", "300ms")
		wantCode(t, r, 0)
		churned := int(20 * d.Seconds())
		if s.Pods != 1+churned || s.FailedPods != 0 {
			t.Errorf("%v of churn: %d pods (%d failed), want %d", d, s.Pods, s.FailedPods, 1+churned)
		}
		wantMethodCalls(t, s, map[string]int{"NodeStageVolume": 1 + churned, "NodeUnstageVolume": 1 + churned})
		assertLoadClean(t, s, root, work)
		return s
	}
	short, long := churn(2*time.Second), churn(6*time.Second)
	a, b := short.Load.Process.PeakRSSBytes, long.Load.Process.PeakRSSBytes
	t.Logf("peak RSS: %.1f MiB for 2 s of churn, %.1f MiB for 6 s", float64(a)/(1<<20), float64(b)/(1<<20))
	if float64(b) > 1.3*float64(a) {
		t.Errorf("peak RSS grew from %d to %d bytes for a run 3x longer: memory is not flat", a, b)
	}
}

// TestLoadMockDriver: 10 pods running together on one PV (the mock
// driver knows only the volumes it made, so the copies share the input's
// volume), through the Kubernetes e2e mock driver: its own log shows the
// volume staged once, published and unpublished once per pod at the pod's
// own target, and unstaged once.
func TestLoadMockDriver(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	mock := startMock(t, work, "--disable-attach")
	mf := writeFile(t, work, "manifests.yaml", pvManifests(csiDriverDoc("  attachRequired: false\n  podInfoOnMount: false\n"),
		"pv-load", "1", "[ReadWriteOnce]", "", "", false))
	r, s, root := loadRun(t, work, mock.Sock, mf, "--replicas", "9", "--shared-volumes", "--duration", "1s")
	wantCode(t, r, 0)
	count := map[string]int{}
	targets := map[string]bool{}
	for _, c := range mockCalls(t, mock) {
		if id, _ := c.Request["volume_id"].(string); id != "" && id != "1" {
			t.Errorf("mock: %s of volume %q, want only volume 1", c.Method, id)
		}
		if c.Error != "" {
			t.Errorf("mock: %s failed: %s", c.Method, c.Error)
		}
		count[c.Method]++
		if tp, _ := c.Request["target_path"].(string); c.Method == "NodePublishVolume" {
			targets[tp] = true
		}
	}
	for m, n := range map[string]int{"NodeStageVolume": 1, "NodePublishVolume": 10, "NodeUnpublishVolume": 10, "NodeUnstageVolume": 1} {
		if count[m] != n {
			t.Errorf("the mock saw %d %s, want %d (all calls: %v)", count[m], m, n, count)
		}
	}
	if len(targets) != 10 {
		t.Errorf("NodePublishVolume to %d target paths, want one per pod (10)", len(targets))
	}
	if s.Pods != 10 || s.FailedPods != 0 {
		t.Errorf("pods %d failed %d, want 10 and 0", s.Pods, s.FailedPods)
	}
	wantMethodCalls(t, s, map[string]int{"NodeStageVolume": 1, "NodePublishVolume": 10, "NodeUnpublishVolume": 10, "NodeUnstageVolume": 1})
	assertLoadClean(t, s, root, work)
}
