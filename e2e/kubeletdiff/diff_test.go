package kubeletdiff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/callcompare"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/difftable"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

const nodeName = difftable.NodeName

// TestKubeletDiff runs every case through the kubelet's own code and
// through the built csi-kubelet-sim, each against its own recording driver,
// with the same root dir, node name and pod, and compares what the two
// drivers were sent: the same calls, in the same order, with the same
// fields (tokens and their timestamps by shape).
func TestKubeletDiff(t *testing.T) {
	bin := os.Getenv("CSI_KUBELET_SIM")
	if bin == "" {
		bin = "../../bin/csi-kubelet-sim"
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the simulator binary %s: %v (run `make build` in the main module, or set CSI_KUBELET_SIM)", bin, err)
	}
	release, minor := kubernetesRelease(t)
	t.Logf("kubelet code: k8s.io/kubernetes %s; simulator: %s --kubelet-version 1.%d", release, bin, minor)
	out := os.Getenv("KUBELETDIFF_OUT")

	for _, c := range cases(t) {
		t.Run(c.Name, func(t *testing.T) {
			if c.MinMinor > minor {
				t.Skipf("needs Kubernetes 1.%d or later", c.MinMinor)
			}
			if c.MaxMinor != 0 && c.MaxMinor < minor {
				t.Skipf("applies up to Kubernetes 1.%d", c.MaxMinor)
			}
			runCase(t, c, bin, minor, out, release)
		})
	}
}

func runCase(t *testing.T, c Case, bin string, minor int, outDir, release string) {
	dir, err := os.MkdirTemp("", "kubeletdiff-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// Nothing attached or mounted under dir may outlive the case.
	defer checkHost(t, dir)
	root := filepath.Join(dir, "root")
	socket := filepath.Join(dir, "csi.sock")
	images := filepath.Join(dir, "images")
	if err := os.Mkdir(images, 0o700); err != nil {
		t.Fatal(err)
	}

	files := caseFiles(t, c, dir)
	gates := c.Gates
	setGates(t, gates)
	in, err := loadInput(files, nodeName)
	if err != nil {
		t.Fatalf("manifests: %v", err)
	}
	in.republish, in.stats = c.Republish, c.Stats
	in.phaseTimeout = c.PhaseTimeout
	cfg := recorder.Config{DriverName: in.driverName, VendorVersion: "0.0.1", NodeID: nodeName, NodeCapabilities: c.Caps, BlockDir: images, Faults: c.Faults}
	if c.RegularFileBlockTarget {
		cfg.BlockDir = ""
	}

	var kubeletLog, simLog io.Writer
	if outDir != "" {
		d := filepath.Join(outDir, release)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		fk, err := os.Create(filepath.Join(d, c.Name+".kubelet.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer fk.Close()
		fs, err := os.Create(filepath.Join(d, c.Name+".sim.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		kubeletLog, simLog = fk, fs
	}

	// The kubelet's code.
	recK, err := recorder.Start(socket, cfg, kubeletLog)
	if err != nil {
		t.Fatal(err)
	}
	klogBuffer.take()
	kerr := runKubelet(t, in, root, socket, recK)
	// What the kubelet code left on the host (loop devices over its map
	// files, their bind mounts: a kubelet would keep retrying to release
	// them), then what the driver did.
	kubeletLeft, _ := releaseHost(root)
	driverLeftK := recK.Stop()
	kubeletKlog := klogBuffer.take()
	kubeletCalls := recK.Calls()
	if c.InUseExpansionRace {
		var dropped bool
		if kubeletCalls, dropped = withoutInUseExpansion(kubeletCalls); dropped {
			t.Logf("dropped the kubelet code's second NodeExpandVolume (the in-use expansion race) before comparing")
		}
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}

	// The simulator, on the same root dir, node and manifests.
	recS, err := recorder.Start(socket, cfg, simLog)
	if err != nil {
		t.Fatal(err)
	}
	statsPeriod := "0" // no NodeGetVolumeStats: an exact call list
	if c.Stats {
		statsPeriod = "3s"
	}
	args := []string{"run", "--endpoint", "unix://" + socket, "--root-dir", root, "--node-name", nodeName,
		"--kubelet-version", fmt.Sprintf("1.%d", minor), "--volume-stats-agg-period", statsPeriod, "-o", "json",
		"--selinux"} // the kubelet code runs with SELinux on, whatever this host has
	for _, f := range files {
		args = append(args, "-f", f)
	}
	if gates != "" {
		args = append(args, "--feature-gates", gates)
	}
	if c.SELinuxLevel != "" {
		args = append(args, "--selinux-level", c.SELinuxLevel)
	}
	switch {
	case c.Republish:
		// exactly one pod sync while the pod runs: the early one that
		// follows the containers' start (at once from 1.36, within the
		// PLEG's 1s relist before), the next a sync frequency (1m) later
		args = append(args, "--hold", "2s")
	case c.Stats:
		// exactly one stats round: the first at the stats analyzer's first
		// tick, one period (3s) after the start, the next 1x to 2x a
		// period after it, past the hold
		args = append(args, "--hold", "4s")
	}
	args = append(args, c.SimArgs...)
	stdout, stderr, code := runSimulator(t, bin, args)
	// A teardown stuck as the kubelet's keeps the volume as it is for
	// `csi-kubelet-sim cleanup` (the simulator removes nothing it cannot
	// undo through the driver): the harness releases it, as it does what
	// the kubelet code left.
	simLeft, _ := releaseHost(root)
	driverLeftS := recS.Stop()
	simCalls := recS.Calls()

	for _, calls := range [][]recorder.Call{kubeletCalls, simCalls} {
		for _, call := range calls {
			if e, ok := call.Request[recorder.BadRequest]; ok {
				t.Fatalf("the recorder could not write down %s: %v", call.Method, e)
			}
		}
	}
	if kerr == nil && !hasMethod(kubeletCalls, "NodePublishVolume") {
		t.Fatalf("the kubelet code sent no NodePublishVolume: the harness did not run the pod")
	}

	kubeletLines, simLines := callcompare.NormalizeAll(kubeletCalls, ""), callcompare.NormalizeAll(simCalls, "")
	same := strings.Join(kubeletLines, "\n") == strings.Join(simLines, "\n")
	sameRequests := strings.Join(callcompare.NormalizeAll(withoutFS(kubeletCalls), ""), "\n") == strings.Join(callcompare.NormalizeAll(withoutFS(simCalls), ""), "\n")

	var problems []string
	stuck := c.StuckAt(minor)
	simFailed := code == 1
	if stuck != "" {
		if p := checkStuck(stuck, kerr, kubeletKlog, code, callcompare.SimMessages(stdout, stderr)); p != "" {
			problems = append(problems, p)
		} else {
			t.Logf("both sides stuck in teardown as a kubelet is: %s", callcompare.StuckError(stuck, callcompare.SimMessages(stdout, stderr)))
			kerr, code = nil, 0
		}
	}
	if c.SimFails != "" {
		if simFailed && strings.Contains(stderr, c.SimFails) {
			t.Logf("the simulator reported the failure, as expected: %s", strings.TrimSpace(stderr))
			code = 0
		} else {
			problems = append(problems, fmt.Sprintf("csi-kubelet-sim should exit 1 with %q; it exited %d\nstderr:\n%s", c.SimFails, code, stderr))
		}
	}
	// A teardown that completes leaves nothing; one that got stuck leaves
	// what it did not release.
	for _, l := range []struct {
		what string
		ok   bool
		left []string
	}{
		{"the kubelet code", kerr == nil && stuck == "", kubeletLeft},
		{"the kubelet code's driver", kerr == nil && stuck == "", driverLeftK},
		{"csi-kubelet-sim", code == 0 && stuck == "", simLeft},
		{"csi-kubelet-sim's driver", code == 0 && stuck == "", driverLeftS},
	} {
		if len(l.left) == 0 {
			continue
		}
		msg := fmt.Sprintf("after %s's teardown the harness released:\n  %s", l.what, strings.Join(l.left, "\n  "))
		if l.ok {
			problems = append(problems, msg)
		} else {
			t.Log(msg)
		}
	}
	if kerr != nil {
		problems = append(problems, fmt.Sprintf("the kubelet code failed: %v\nits log:\n%s", kerr, kubeletKlog))
	}
	if code != 0 {
		problems = append(problems, fmt.Sprintf("csi-kubelet-sim %s exited %d\nstderr:\n%s\nstdout (last lines):\n%s",
			strings.Join(args, " "), code, stderr, tail(stdout, 15)))
	}
	if !same {
		problems = append(problems, "the requests differ:\n"+callcompare.Diff("kubelet code", kubeletLines, simLines))
	}
	if len(problems) == 0 {
		t.Logf("%d calls, identical", len(kubeletLines))
		return
	}
	report := strings.Join(problems, "\n")
	if reason := c.OutlierAt(minor); reason != "" {
		t.Log(report)
		t.Skipf("the kubelet code is the outlier here: %s", reason)
	}
	if reason := c.FSOutlierAt(minor); reason != "" && kerr == nil && code == 0 && sameRequests {
		t.Log(report)
		t.Skipf("the requests are identical; what the driver found on disk differs, and the harness is the outlier there: %s", reason)
	}
	t.Errorf("csi-kubelet-sim %s\n%s", strings.Join(args, " "), report)
}

// checkStuck checks a case whose teardown gets stuck (Case.TeardownStuck):
// the kubelet code timed out in its teardown, retrying an operation that
// failed with prefix; the simulator exited 1 with the same error after the
// volume's name. It returns what is wrong, "" if nothing.
func checkStuck(prefix string, kerr error, klog string, code int, stderr string) string {
	k, s := callcompare.StuckError(prefix, klog), callcompare.StuckError(prefix, stderr)
	switch {
	case kerr == nil:
		return fmt.Sprintf("the kubelet code's teardown should get stuck at %q, it completed", prefix)
	case !strings.HasPrefix(kerr.Error(), "teardown: "):
		return fmt.Sprintf("the kubelet code should get stuck in teardown at %q, it failed: %v\nits log:\n%s", prefix, kerr, klog)
	case k == "":
		return fmt.Sprintf("the kubelet code got stuck in teardown (%v), but not at %q\nits log:\n%s", kerr, prefix, klog)
	case code != 1 || s == "":
		return fmt.Sprintf("csi-kubelet-sim should exit 1 with %q ... : %s; it exited %d\nstderr:\n%s", prefix, k, code, stderr)
	case k != s:
		return fmt.Sprintf("stuck at %q with different errors:\n  kubelet: %s\n  sim:     %s", prefix, k, s)
	}
	return ""
}

func runSimulator(t *testing.T, bin string, args []string) (stdout, stderr string, code int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("csi-kubelet-sim: %v", err)
	}
	return o.String(), e.String(), code
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// setGates sets kubelet feature gates, kubelet syntax A=true,B=false, for
// the rest of the test.
func setGates(t *testing.T, gates string) {
	if gates == "" {
		return
	}
	for _, kv := range strings.Split(gates, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || (v != "true" && v != "false") {
			t.Fatalf("feature gate %q: want Name=true|false", kv)
		}
		featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, featuregate.Feature(k), v == "true")
	}
}

// kubernetesRelease is the Kubernetes release whose code this test binary
// is built with (go.mod, or the -modfile the Makefile picks), so that the
// simulator is asked to reproduce the same kubelet. A test binary carries no
// module versions, so the minor comes from the code itself (codeMinorVersion
// in release_*_test.go: component-base's DefaultKubeBinaryVersion, the
// release's own "1.X", from 1.31 on); KUBE_VERSION, which
// the Makefile sets with the -modfile it picks, names the patch release and
// is checked against it.
func kubernetesRelease(t *testing.T) (string, int) {
	var major, minor int
	if _, err := fmt.Sscanf(codeMinorVersion(), "%d.%d", &major, &minor); err != nil || major != 1 {
		t.Fatalf("the code's Kubernetes release %q", codeMinorVersion())
	}
	release := fmt.Sprintf("v1.%d", minor)
	if want := os.Getenv("KUBE_VERSION"); want != "" {
		var wmajor, wminor, wpatch int
		if _, err := fmt.Sscanf(want, "v%d.%d.%d", &wmajor, &wminor, &wpatch); err != nil || wmajor != 1 || wminor != minor {
			t.Fatalf("KUBE_VERSION=%s but the test is built with the code of Kubernetes 1.%d (go test -modfile=go.%s.mod?)", want, minor, want)
		}
		release = want
	}
	return release, minor
}

// withoutFS is the calls with only what was sent.
func withoutFS(calls []recorder.Call) []recorder.Call {
	out := make([]recorder.Call, len(calls))
	for i, c := range calls {
		c.FS = nil
		out[i] = c
	}
	return out
}

// withoutInUseExpansion drops a second NodeExpandVolume and the capability
// queries just before it (EXPAND_VOLUME, then the access-mode mapper's).
func withoutInUseExpansion(calls []recorder.Call) ([]recorder.Call, bool) {
	seen := 0
	for i, c := range calls {
		if c.Short() != "NodeExpandVolume" {
			continue
		}
		if seen++; seen < 2 {
			continue
		}
		start := i
		for start > 0 && i-start < 2 && calls[start-1].Short() == "NodeGetCapabilities" {
			start--
		}
		return append(append([]recorder.Call{}, calls[:start]...), calls[i+1:]...), true
	}
	return calls, false
}

func hasMethod(calls []recorder.Call, short string) bool {
	for _, c := range calls {
		if c.Short() == short {
			return true
		}
	}
	return false
}
