package drivertest_test

// The package's own behaviour, through the examples: they pass as an
// ordinary user, `go test -run` focuses one scenario, and a driver that
// fails a scenario fails its subtest (and only the subtests it fails).

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/internal/asuser"
)

// faultEnv gives TestExampleConformance's driver a fault, for
// TestConformanceFails's run of it.
const faultEnv = "DRIVERTEST_EXAMPLE_FAULT"

// TestExamplesAsOrdinaryUser runs the examples again as uid 65534: the
// kubelet's steps for file-system volumes and a driver that needs no root
// need no root.
func TestExamplesAsOrdinaryUser(t *testing.T) {
	if asuser.Dir() != "" {
		t.Skip("the run as the ordinary user itself")
	}
	files := map[string]string{}
	for _, f := range []string{"csidriver.yaml", "test-driver.yaml", "pod.yaml"} {
		files[filepath.Join("testdata", f)] = filepath.Join("testdata", f)
	}
	_, out := asuser.Rerun(t, "^TestExample", "TestExampleConformance", files)
	for _, want := range []string{"--- PASS: TestExamplePodInfo", "--- PASS: TestExampleDriverFails", "--- PASS: TestExampleConformance/lifecycle/persistent", "--- PASS: TestExampleConformance/lifecycle/ephemeral", "--- PASS: TestExampleConformance/testdriver/declarations"} {
		if !strings.Contains(out, want) {
			t.Errorf("as uid %d: no %q", asuser.UID, want)
		}
	}
	// Skipped with its reason, not failed.
	if !strings.Contains(out, "--- SKIP: TestExampleConformance/lifecycle/block") {
		t.Errorf("as uid %d: lifecycle/block not skipped", asuser.UID)
	}
}

// runExamples runs this test binary again on pattern, with env.
func runExamples(t *testing.T, pattern string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+pattern, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// `go test -run 'TestExampleConformance/lifecycle/persistent'` runs that
// scenario alone.
func TestConformanceFocus(t *testing.T) {
	if os.Getenv(faultEnv) != "" || asuser.Dir() != "" {
		t.Skip("inside another run")
	}
	out, err := runExamples(t, "^TestExampleConformance$/^lifecycle/persistent$")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, "=== RUN   TestExampleConformance/"); n != 1 {
		t.Errorf("%d subtests ran, want lifecycle/persistent alone:\n%s", n, out)
	}
	if !strings.Contains(out, "--- PASS: TestExampleConformance/lifecycle/persistent") {
		t.Errorf("lifecycle/persistent did not pass:\n%s", out)
	}
}

// A driver that fails NodePublishVolume fails the scenarios that publish,
// each with the kubelet's need and section, and passes the others.
func TestConformanceFails(t *testing.T) {
	if os.Getenv(faultEnv) != "" || asuser.Dir() != "" {
		t.Skip("inside another run")
	}
	out, err := runExamples(t, "^TestExampleConformance$", faultEnv+"=NodePublishVolume=Internal")
	if err == nil {
		t.Fatalf("the examples passed against a driver that fails NodePublishVolume:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestExampleConformance/lifecycle/persistent",
		"--- FAIL: TestExampleConformance/lifecycle/ephemeral",
		"code = Internal",
		"docs/kubelet.md §",
		"--- PASS: TestExampleConformance/registration/node-info",
		"--- PASS: TestExampleConformance/testdriver/declarations",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
