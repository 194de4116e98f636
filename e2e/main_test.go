// Package e2e runs the built csi-kubelet-sim binary against real CSI drivers:
// the reference driver (real bind mounts) and the Kubernetes e2e CSI mock
// driver (whose gRPCCall log shows exactly what it received).
//
// Expected values are written from docs/kubelet.md (the section is
// named next to each), never from the simulator's own output.
//
// The binaries come from `make build tools`; the tests find them through
// CSI_KUBELET_SIM, CSI_REFDRIVER and CSI_MOCK_DRIVER, else ../bin/<name>.
// They need root (real mounts).
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
)

const (
	refDriverName = "ref.csi.kubelet-sim.io" // the reference driver's default name
	simNode       = "sim-node"               // --node-name used by every test
	simTimeout    = 60 * time.Second         // upper bound for one simulator run

	// Pod UIDs of the samples (fixtures/samples/*/*.yaml, metadata.uid).
	inlineUID  = "9a3c3c6e-1111-4d2b-9c51-0e2f8d1a7b01"
	stagedUID  = "9a3c3c6e-2222-4d2b-9c51-0e2f8d1a7b02"
	attachUID  = "9a3c3c6e-3333-4d2b-9c51-0e2f8d1a7b03"
	secretsUID = "9a3c3c6e-4444-4d2b-9c51-0e2f8d1a7b04"
)

// ---------------------------------------------------------------------------
// Binaries

// binary returns the absolute path of a built binary: $env, else ../bin/name.
func binary(tb testing.TB, env, name string) string {
	tb.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = filepath.Join("..", "bin", name)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		tb.Fatalf("%s not found at %s (set %s or run `make build tools` in the repository root)", name, abs, env)
	}
	return abs
}

func simBin(tb testing.TB) string  { return binary(tb, "CSI_KUBELET_SIM", "csi-kubelet-sim") }
func refBin(tb testing.TB) string  { return binary(tb, "CSI_REFDRIVER", "csi-refdriver") }
func mockBin(tb testing.TB) string { return binary(tb, "CSI_MOCK_DRIVER", "csi-mock-driver") }

// sample returns the absolute path of fixtures/samples/<name>.
func sample(tb testing.TB, name string) string {
	tb.Helper()
	p, err := filepath.Abs(filepath.Join("..", "fixtures", "samples", name))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("sample %s: %v", name, err)
	}
	return p
}

// ---------------------------------------------------------------------------
// Work directories, mounts and clean-up

// workDir makes a short temporary directory (unix socket paths are limited to
// 108 bytes, and t.TempDir embeds the test name). On clean-up, even after a
// failure, everything mounted under it is unmounted before it is removed; if
// something cannot be unmounted the directory is kept (removing it would reach
// through the mount) and the test fails.
func workDir(tb testing.TB) string {
	tb.Helper()
	d, err := os.MkdirTemp("", "ksim-e2e-")
	if err != nil {
		tb.Fatal(err)
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	tb.Cleanup(func() {
		if left := unmountAll(d); len(left) > 0 {
			tb.Errorf("cleanup: still mounted under %s, directory kept: %v", d, left)
			return
		}
		if err := os.RemoveAll(d); err != nil {
			tb.Errorf("cleanup: %v", err)
		}
	})
	return d
}

// mountsUnder returns the mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return []string{"<mountinfo: " + err.Error() + ">"}
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// isMountPoint reports whether p itself is a mount point (per mountinfo).
func isMountPoint(p string) bool {
	ms, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.Mountpoint != p, false
	})
	return err == nil && len(ms) > 0
}

// unmountAll lazily unmounts everything under dir (stacked mounts too) and
// returns what is still mounted.
func unmountAll(dir string) []string {
	for i := 0; i < 20; i++ {
		ms := mountsUnder(dir)
		if len(ms) == 0 {
			return nil
		}
		for _, m := range ms {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
	return mountsUnder(dir)
}

// waitMounted polls /proc/self/mountinfo until p is a mount point.
func waitMounted(tb testing.TB, p string, timeout time.Duration, exited <-chan struct{}) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !isMountPoint(p) {
		select {
		case <-exited:
			tb.Fatalf("the simulator exited before %s was mounted", p)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s not mounted after %v; mounts: %v", p, timeout, mountsUnder(filepath.Dir(filepath.Dir(p))))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertNothingLeft checks that the root dir is gone and nothing is mounted
// under it (nor anywhere under the test's work dir).
func assertNothingLeft(tb testing.TB, root, work string) {
	tb.Helper()
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		var left []string
		_ = filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error {
			left = append(left, p)
			return nil
		})
		tb.Errorf("root dir %s left behind (stat: %v): %v", root, err, left)
	}
	if ms := mountsUnder(root); len(ms) > 0 {
		tb.Errorf("still mounted under the root dir: %v", ms)
	}
	if work != "" {
		if ms := mountsUnder(work); len(ms) > 0 {
			tb.Errorf("still mounted under %s: %v", work, ms)
		}
	}
}

// ---------------------------------------------------------------------------
// Paths and names, from docs/kubelet.md

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// targetPath is docs/kubelet.md §1.2: <root>/pods/<podUID>/volumes/kubernetes.io~csi/<specName>/mount.
func targetPath(root, podUID, specName string) string {
	return root + "/pods/" + podUID + "/volumes/kubernetes.io~csi/" + specName + "/mount"
}

// stagingPath is docs/kubelet.md §1.3: <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount.
func stagingPath(root, driver, handle string) string {
	return root + "/plugins/kubernetes.io/csi/" + driver + "/" + sha256hex(handle) + "/globalmount"
}

// inlineHandle is docs/kubelet.md §2: "csi-" + hex(sha256(podUID + podVolumeName)).
func inlineHandle(podUID, volName string) string { return "csi-" + sha256hex(podUID+volName) }

// attachmentName is docs/kubelet.md §10: "csi-" + hex(sha256(volumeHandle + driverName + nodeName)).
func attachmentName(handle, driver, node string) string {
	return "csi-" + sha256hex(handle+driver+node)
}

// ---------------------------------------------------------------------------
// Drivers

// waitSocket waits for a unix socket to accept connections.
func waitSocket(tb testing.TB, sock string, exited <-chan struct{}, logf string) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.DialTimeout("unix", sock, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			tb.Fatalf("driver exited before listening on %s; its log:\n%s", sock, readFile(logf))
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("driver not listening on %s after 15s; its log:\n%s", sock, readFile(logf))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// driverProc is a driver started by a test.
type driverProc struct {
	Sock   string
	Log    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Stop sends SIGTERM and waits (then SIGKILL); idempotent.
func (d *driverProc) Stop() {
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}

func startDriver(tb testing.TB, bin, sock, logf string, args ...string) *driverProc {
	tb.Helper()
	lf, err := os.Create(logf)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = lf
	cmd.Stderr = lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		tb.Fatalf("start %s: %v", bin, err)
	}
	d := &driverProc{Sock: sock, Log: logf, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		lf.Close()
		close(d.exited)
	}()
	tb.Cleanup(d.Stop)
	waitSocket(tb, sock, d.exited, logf)
	return d
}

// startRefDriver starts bin/csi-refdriver on work/<name>.sock with its data
// dir under work.
func startRefDriver(tb testing.TB, work string, args ...string) *driverProc {
	tb.Helper()
	data := filepath.Join(work, "refdata")
	if err := os.MkdirAll(data, 0o755); err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(work, "ref.sock")
	all := append([]string{"--endpoint", "unix://" + sock, "--data-dir", data, "--node-id", "ref-node-id", "-v", "1"}, args...)
	return startDriver(tb, refBin(tb), sock, filepath.Join(work, "refdriver.log"), all...)
}

// startMock starts bin/csi-mock-driver at -v=3 (every call logged).
func startMock(tb testing.TB, work string, args ...string) *driverProc {
	tb.Helper()
	sock := filepath.Join(work, "mock.sock")
	all := append([]string{"--endpoint=unix://" + sock, "--node-id=" + mockNodeID, "-v=3"}, args...)
	return startDriver(tb, mockBin(tb), sock, filepath.Join(work, "mock.log"), all...)
}

// ---------------------------------------------------------------------------
// Running the simulator

// simResult is one finished run of csi-kubelet-sim.
type simResult struct {
	Args   []string
	Code   int
	Stdout string
	Stderr string
}

func (r simResult) String() string {
	return fmt.Sprintf("csi-kubelet-sim %s\nexit %d\n--- stdout:\n%s\n--- stderr:\n%s", strings.Join(r.Args, " "), r.Code, r.Stdout, r.Stderr)
}

// runSim runs the simulator to completion.
func runSim(tb testing.TB, args ...string) simResult {
	tb.Helper()
	return runSimWithin(tb, simTimeout, args...)
}

// runSimWithin is runSim with another bound: for runs whose own waits
// (an API server's readiness) come near simTimeout on a loaded machine.
func runSimWithin(tb testing.TB, limit time.Duration, args ...string) simResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, simBin(tb), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := simResult{Args: args, Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	default:
		tb.Fatalf("run csi-kubelet-sim: %v", err)
	}
	if ctx.Err() != nil {
		tb.Fatalf("csi-kubelet-sim did not finish within %v\n%s", limit, r)
	}
	return r
}

// bgSim is a simulator run in the background; its output can be read
// while it runs.
type bgSim struct {
	cmd    *exec.Cmd
	out    lockedBuffer
	errb   lockedBuffer
	args   []string
	exited chan struct{}
	err    error
}

// lockedBuffer is a bytes.Buffer that can be read while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startSim(tb testing.TB, args ...string) *bgSim {
	tb.Helper()
	return startSimWith(tb, nil, args...)
}

// startSimWith starts the simulator with attr (nil: as startSim); the
// cleanup kills what is still running: its group when it has one.
func startSimWith(tb testing.TB, attr *syscall.SysProcAttr, args ...string) *bgSim {
	tb.Helper()
	s := &bgSim{args: args, exited: make(chan struct{})}
	s.cmd = exec.Command(simBin(tb), args...)
	s.cmd.SysProcAttr = attr
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.errb
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			if attr != nil && attr.Setpgid {
				_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			} else {
				_ = s.cmd.Process.Kill()
			}
			<-s.exited
		}
	})
	return s
}

// wait waits for the run to end and returns its result.
func (s *bgSim) wait(tb testing.TB, timeout time.Duration) simResult {
	tb.Helper()
	select {
	case <-s.exited:
	case <-time.After(timeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		tb.Fatalf("csi-kubelet-sim still running after %v; stdout:\n%s\nstderr:\n%s", timeout, s.out.String(), s.errb.String())
	}
	r := simResult{Args: s.args, Stdout: s.out.String(), Stderr: s.errb.String()}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		r.Code = ee.ExitCode()
	} else if s.err != nil {
		tb.Fatalf("csi-kubelet-sim: %v", s.err)
	}
	return r
}

// ---------------------------------------------------------------------------
// The JSON trace (-o json)

// traceLine is one line of `-o json` output.
type traceLine struct {
	Kind       string          `json:"kind"`
	Seq        int             `json:"seq"`
	Time       time.Time       `json:"time"`
	Component  string          `json:"component"`
	Operation  string          `json:"operation"`
	Volume     string          `json:"volume"`
	Pod        string          `json:"pod"`
	Asking     string          `json:"asking"`
	Method     string          `json:"method"`
	Request    map[string]any  `json:"request"`
	Response   map[string]any  `json:"response"`
	Code       string          `json:"code"`
	Error      string          `json:"error"`
	TimedOut   bool            `json:"timed_out"`
	DurationMS float64         `json:"duration_ms"`
	Text       string          `json:"text"`
	Level      string          `json:"level"`
	Calls      int             `json:"calls"`
	Interrupt  bool            `json:"interrupted"`
	LeftBehind json.RawMessage `json:"left_behind"`
	Raw        string          `json:"-"`
}

// parseTrace decodes every line of stdout; a line that is not JSON fails.
func parseTrace(tb testing.TB, r simResult) []traceLine {
	tb.Helper()
	var out []traceLine
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var l traceLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			tb.Fatalf("stdout line is not JSON (%v): %q\n%s", err, line, r)
		}
		l.Raw = line
		out = append(out, l)
	}
	return out
}

func calls(lines []traceLine) []traceLine {
	var out []traceLine
	for _, l := range lines {
		if l.Kind == "call" {
			out = append(out, l)
		}
	}
	return out
}

func summary(tb testing.TB, lines []traceLine) traceLine {
	tb.Helper()
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Kind == "summary" {
			return lines[i]
		}
	}
	tb.Fatalf("no summary line in the JSON trace")
	return traceLine{}
}

func methods(cs []traceLine) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Method)
	}
	return out
}

// capabilityNames lists the rpc capability types of a NodeGetCapabilities
// response as protojson prints them.
func capabilityNames(resp map[string]any) []string {
	var out []string
	caps, _ := resp["capabilities"].([]any)
	for _, c := range caps {
		m, _ := c.(map[string]any)
		rpc, _ := m["rpc"].(map[string]any)
		if t, ok := rpc["type"].(string); ok {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------------------
// Assertions

// oneLineError checks the error contract: stderr is exactly one line
// "csi-kubelet-sim: <message>", containing every want.
func oneLineError(tb testing.TB, r simResult, want ...string) string {
	tb.Helper()
	msg := strings.TrimSuffix(r.Stderr, "\n")
	if msg == "" || strings.Contains(msg, "\n") {
		tb.Errorf("stderr should be exactly one line, got %q\n%s", r.Stderr, r)
	}
	if !strings.HasPrefix(msg, "csi-kubelet-sim: ") {
		tb.Errorf("stderr should start with %q, got %q", "csi-kubelet-sim: ", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			tb.Errorf("stderr %q does not mention %q", msg, w)
		}
	}
	return msg
}

func wantCode(tb testing.TB, r simResult, code int) {
	tb.Helper()
	if r.Code != code {
		tb.Fatalf("exit code %d, want %d\n%s", r.Code, code, r)
	}
}

// jsonEqual compares two JSON-like values; on a difference it returns both
// as indented JSON.
func jsonEqual(got, want any) (bool, string) {
	g := normJSON(got)
	w := normJSON(want)
	if reflect.DeepEqual(g, w) {
		return true, ""
	}
	gb, _ := json.MarshalIndent(g, "  ", "  ")
	wb, _ := json.MarshalIndent(w, "  ", "  ")
	return false, fmt.Sprintf("got:\n  %s\nwant:\n  %s", gb, wb)
}

// normJSON round-trips v through encoding/json so that typed Go values
// compare equal to decoded ones.
func normJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// writeFile writes content to dir/name and returns the path.
func writeFile(tb testing.TB, dir, name, content string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}
