package e2e

// Benchmarks of what a user pays, each reported as a ratio measured in one
// run, the two sides interleaved so that the noise of a shared machine hits
// both: `run` against a minimal client making the same calls, `plan` at 100
// and 1000 pods, `load` of 110 pods whose NodePublishVolume hangs 200 ms,
// and (in conformance_test.go) `conformance` against csi-sanity.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchWorkDir is a directory in workDir on a tmpfs of its own (the tests run in a
// private mount namespace; workDir's clean-up unmounts it), unless
// CSI_BENCH_ON_DISK is set. On ext4, mkdir(2) scans past every inode
// deleted in the last seconds (ext4's recently_deleted), so back-to-back
// runs that make and remove thousands of directories measure the file
// system's bookkeeping of their own churn (0.7 ms per mkdir seen on the
// CI machine) more than either side of the comparison.
func benchWorkDir(b *testing.B) string {
	b.Helper()
	work := workDir(b)
	if os.Getenv("CSI_BENCH_ON_DISK") != "" {
		return work
	}
	if err := syscall.Mount("tmpfs", work, "tmpfs", 0, "mode=0755,size=512m"); err != nil {
		b.Fatalf("tmpfs on %s (set CSI_BENCH_ON_DISK=1 to run on disk): %v", work, err)
	}
	// A directory in the tmpfs, so that "nothing mounted under the work
	// dir" does not see the tmpfs itself.
	inner := filepath.Join(work, "w")
	if err := os.Mkdir(inner, 0o755); err != nil {
		b.Fatal(err)
	}
	return inner
}

// procCost is what one finished process cost.
type procCost struct {
	wall, cpu time.Duration
	maxRSS    int64 // bytes
	stdout    string
	stderr    string
	code      int
}

// timedProc runs bin to completion and measures its wall time, its CPU
// (user + system, from the kernel's accounting of the child) and peak RSS.
func timedProc(tb testing.TB, bin string, args ...string) procCost {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	c := procCost{wall: time.Since(start), stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		c.code = ee.ExitCode()
	default:
		tb.Fatalf("%s: %v", bin, err)
	}
	if st := cmd.ProcessState; st != nil {
		c.cpu = st.UserTime() + st.SystemTime()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			c.maxRSS = ru.Maxrss * 1024
		}
	}
	return c
}

// costs sums the costs of a benchmark's side.
type costs struct {
	n         int
	wall, cpu time.Duration
}

func (c *costs) add(p procCost) { c.n++; c.wall += p.wall; c.cpu += p.cpu }

func (c costs) ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(c.n) }

// ratio is a/b, for the x- metrics.
func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// BenchmarkRunVsMinimalClient: a whole `run` process of the staged sample
// (registration, stage, publish, unpublish, unstage, with real bind mounts)
// against a minimal Go program (e2e/testdata/minclient) making the same
// calls with the same requests, each on a new connection, to the same
// reference driver. The requests are those of the simulator's own trace.
// x-cpu is the CPU ratio (the goal: at most 1.2), x-wall the wall ratio.
func BenchmarkRunVsMinimalClient(b *testing.B) {
	work := benchWorkDir(b)
	drv := startRefDriver(b, work)
	staged := sample(b, "staged")
	minclient := buildMinClient(b, work)

	simArgs := func(root string) []string {
		return []string{"run", "-f", staged, "--endpoint", "unix://" + drv.Sock, "--root-dir", root, "--node-name", simNode}
	}
	// The requests the simulator sends, with its root dir as a placeholder.
	warmRoot := filepath.Join(work, "root-w")
	warm := runSim(b, append(simArgs(warmRoot), "-o", "json")...)
	if warm.Code != 0 {
		b.Fatalf("run failed:\n%s", warm)
	}
	callsFile := writeCalls(b, work, calls(parseTrace(b, warm)), warmRoot)
	sim, bare := simBin(b), costs{}
	var simC costs
	one := func(i int) {
		root := filepath.Join(work, fmt.Sprintf("root-%d", i))
		s := timedProc(b, sim, simArgs(root)...)
		if s.code != 0 {
			b.Fatalf("run exited %d:\n%s%s", s.code, s.stdout, s.stderr)
		}
		simC.add(s)
		mroot := filepath.Join(work, fmt.Sprintf("min-%d", i))
		m := timedProc(b, minclient, drv.Sock, callsFile, mroot)
		if m.code != 0 {
			b.Fatalf("minclient exited %d: %s", m.code, m.stderr)
		}
		bare.add(m)
	}
	one(-1) // warm-up: page cache, the driver's first calls
	simC, bare = costs{}, costs{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		one(i)
	}
	b.StopTimer()
	assertNothingLeft(b, filepath.Join(work, "root-0"), work)
	b.ReportMetric(simC.ms(simC.cpu), "run-cpu-ms")
	b.ReportMetric(bare.ms(bare.cpu), "minclient-cpu-ms")
	b.ReportMetric(simC.ms(simC.wall), "run-wall-ms")
	b.ReportMetric(bare.ms(bare.wall), "minclient-wall-ms")
	b.ReportMetric(ratio(simC.cpu, bare.cpu), "x-cpu")
	b.ReportMetric(ratio(simC.wall, bare.wall), "x-wall")
}

// buildMinClient builds e2e/testdata/minclient into work.
func buildMinClient(b *testing.B, work string) string {
	b.Helper()
	out := filepath.Join(work, "minclient")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/minclient")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./testdata/minclient: %v\n%s", err, msg)
	}
	return out
}

// writeCalls writes the calls' methods and requests for minclient, the
// root dir replaced by @ROOT@.
func writeCalls(b *testing.B, work string, cs []traceLine, root string) string {
	b.Helper()
	type call struct {
		Method  string         `json:"method"`
		Request map[string]any `json:"request"`
	}
	var list []call
	for _, c := range cs {
		list = append(list, call{c.Method, c.Request})
	}
	data, err := json.Marshal(list)
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Contains(data, []byte(root)) {
		b.Fatalf("the requests do not mention the root dir %s: %s", root, data)
	}
	return writeFile(b, work, "calls.json", strings.ReplaceAll(string(data), root, "@ROOT@"))
}

// BenchmarkPlanScaling: `plan` of 100 and of 1000 staged pods (each with
// its own claim and PV), interleaved. x-cpu-10x-pods is the CPU of 1000
// over the CPU of 100 (the goal: at most 11), x-wall-10x-pods the same for
// wall time.
func BenchmarkPlanScaling(b *testing.B) {
	work := benchWorkDir(b)
	small := writeFile(b, work, "pods-100.yaml", stagedPods(100))
	large := writeFile(b, work, "pods-1000.yaml", stagedPods(1000))
	sim := simBin(b)
	plan := func(f string, i int, n int) procCost {
		root := filepath.Join(work, fmt.Sprintf("root-%d-%d", n, i))
		p := timedProc(b, sim, "plan", "-f", f, "--root-dir", root, "--node-name", simNode, "-o", "json")
		if p.code != 0 {
			b.Fatalf("plan of %d pods exited %d: %s", n, p.code, p.stderr)
		}
		if got := strings.Count(p.stdout, `"method":"NodePublishVolume"`); got != n {
			b.Fatalf("plan of %d pods made %d NodePublishVolume calls", n, got)
		}
		return p
	}
	var c100, c1000 costs
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c100.add(plan(small, i, 100))
		c1000.add(plan(large, i, 1000))
	}
	b.StopTimer()
	b.ReportMetric(c100.ms(c100.cpu), "100-pods-cpu-ms")
	b.ReportMetric(c1000.ms(c1000.cpu), "1000-pods-cpu-ms")
	b.ReportMetric(c100.ms(c100.wall), "100-pods-wall-ms")
	b.ReportMetric(c1000.ms(c1000.wall), "1000-pods-wall-ms")
	b.ReportMetric(ratio(c1000.cpu, c100.cpu), "x-cpu-10x-pods")
	b.ReportMetric(ratio(c1000.wall, c100.wall), "x-wall-10x-pods")
}

// stagedPods is n pods like fixtures/samples/staged, each with its own
// claim and PersistentVolume.
func stagedPods(n int) string {
	var sb strings.Builder
	sb.WriteString("apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: " + refDriverName +
		"\nspec:\n  attachRequired: false\n  podInfoOnMount: false\n")
	for i := range n {
		fmt.Fprintf(&sb, `---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-%[1]d
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  claimRef: {namespace: default, name: data-%[1]d}
  csi: {driver: %[2]s, volumeHandle: vol-%[1]d, fsType: ext4}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-%[1]d, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  volumeName: pv-%[1]d
---
apiVersion: v1
kind: Pod
metadata: {name: db-%[1]d, namespace: default, uid: 00000000-0000-4000-8000-%012[1]d}
spec:
  containers: [{name: db, image: pause, volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data-%[1]d}}]
`, i, refDriverName)
	}
	return sb.String()
}

// hangPods and hang are BenchmarkLoadHang's load: 110 pods (a node's
// default maximum) whose NodePublishVolume each takes 200 ms.
const (
	hangPods = 110
	hang     = 200 * time.Millisecond
)

// BenchmarkLoadHang: `load` of the staged sample and 109 copies, each with
// its own volume, against a reference driver whose NodePublishVolume sleeps
// 200 ms: one after another that is 22 s of publishing alone. It reports
// the wall time (the goal: under 2 s), its ratio to 22 s, the most
// NodePublishVolume calls in flight at once, and the simulator's CPU and
// peak RSS.
func BenchmarkLoadHang(b *testing.B) {
	work := benchWorkDir(b)
	drv := startRefDriver(b, work, "--fault", "NodePublishVolume=hang:"+hang.String())
	staged := sample(b, "staged")
	sim := simBin(b)
	var c costs
	var inFlight, rss int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		root := filepath.Join(work, fmt.Sprintf("root-%d", i))
		p := timedProc(b, sim, "load", "-f", staged, "--replicas", fmt.Sprint(hangPods-1), "--endpoint", "unix://"+drv.Sock,
			"--root-dir", root, "--node-name", simNode, "-o", "json")
		if p.code != 0 {
			b.Fatalf("load exited %d: %s\n%s", p.code, p.stderr, lastLine(p.stdout))
		}
		c.add(p)
		rss = max(rss, p.maxRSS)
		ls := loadSummaryOf(b, p.stdout)
		if ls.Pods != hangPods {
			b.Fatalf("load ran %d pods, want %d", ls.Pods, hangPods)
		}
		inFlight = max(inFlight, int64(ls.method(b, "NodePublishVolume").MaxInFlight))
	}
	b.StopTimer()
	serial := time.Duration(hangPods) * hang
	b.ReportMetric(c.ms(c.wall), "wall-ms")
	b.ReportMetric(ratio(c.wall/time.Duration(c.n), serial), "x-serial-22s")
	b.ReportMetric(c.ms(c.cpu), "sim-cpu-ms")
	b.ReportMetric(float64(rss)/(1<<20), "sim-peak-rss-MiB")
	b.ReportMetric(float64(inFlight), "publish-max-in-flight")
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// loadSummary is the last line of `load -o json`.
type loadSummary struct {
	Kind       string `json:"kind"`
	Pods       int    `json:"pods"`
	FailedPods int    `json:"failed_pods"`
	ExitCode   int    `json:"exit_code"`
	Result     string `json:"result"`
	Load       struct {
		Methods []loadMethod `json:"methods"`
		Process struct {
			CPUSeconds   float64 `json:"cpu_seconds"`
			PeakRSSBytes int64   `json:"peak_rss_bytes"`
		} `json:"process"`
	} `json:"load"`
	LeftBehind struct {
		Clean bool `json:"clean"`
	} `json:"left_behind"`
}

// loadMethod is one CSI method's row of the load report.
type loadMethod struct {
	Method         string             `json:"method"`
	Calls          int                `json:"calls"`
	Errors         map[string]int     `json:"errors"`
	TimedOut       int                `json:"timed_out"`
	CallsPerSecond float64            `json:"calls_per_second"`
	MaxInFlight    int                `json:"max_in_flight"`
	LatencyMS      map[string]float64 `json:"latency_ms"`
}

func (s loadSummary) method(tb testing.TB, name string) loadMethod {
	tb.Helper()
	for _, m := range s.Load.Methods {
		if m.Method == name {
			return m
		}
	}
	tb.Fatalf("no %s in the load report's methods", name)
	return loadMethod{}
}

func loadSummaryOf(tb testing.TB, stdout string) loadSummary {
	tb.Helper()
	var s loadSummary
	if err := json.Unmarshal([]byte(lastLine(stdout)), &s); err != nil || s.Kind != "load" {
		tb.Fatalf("the last line of load -o json is not the load summary (%v): %s", err, lastLine(stdout))
	}
	return s
}
