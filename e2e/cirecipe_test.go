package e2e

// The CI recipe (examples/ci/conformance.sh, and the GitHub Actions workflow
// that runs it, docs/conformance.md "In your CI") is what a driver team
// copies: it is run here as they would, against the reference driver, and
// what it leaves is what they would look at: the JUnit file, the HTML report,
// the exit code, and nothing else on the machine.

import (
	"context"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const ciScript = "examples/ci/conformance.sh"

// repoFile is the absolute path of a file of the repository.
func repoFile(tb testing.TB, rel string) string {
	tb.Helper()
	p, err := filepath.Abs(filepath.Join("..", rel))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s: %v", rel, err)
	}
	return p
}

// ciRun is one run of the recipe's script.
type ciRun struct {
	code       int
	out, root  string
	sock, data string
	stdout     string
}

// runCIScript runs the script as a driver's CI would, with the built
// binaries, the reference driver (started by the script, given extra
// flags) and the reference driver's CSIDriver and test definition.
func runCIScript(t *testing.T, driverArgs string, env ...string) ciRun {
	t.Helper()
	work := workDir(t)
	r := ciRun{out: filepath.Join(work, "results"), root: filepath.Join(work, "root"),
		sock: filepath.Join(work, "ci.sock"), data: filepath.Join(work, "refdata")}
	for _, d := range []string{r.root, r.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	driver := refBin(t) + ` --endpoint "$CSI_ENDPOINT" --data-dir ` + r.data + " --node-id ci-node -v 1 " + driverArgs
	ctx, cancel := context.WithTimeout(context.Background(), 2*simTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, repoFile(t, ciScript))
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"CSI_KUBELET_SIM="+simBin(t),
		"DRIVER_CMD="+driver,
		"DRIVER_SOCKET="+r.sock,
		"CSIDRIVER_FILE="+repoFile(t, "examples/ci/csidriver.yaml"),
		"TESTDRIVER_FILE="+repoFile(t, "fixtures/testdriver/refdriver.yaml"),
		"OUT_DIR=results", // relative, as in the workflow
		"ROOT_DIR="+r.root,
	)
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.CombinedOutput()
	r.stdout = string(b)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v\n%s", ciScript, err, b)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v:\n%s", ciScript, 2*simTimeout, b)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(r.out, "driver.log"))
			t.Logf("%s output:\n%s\ndriver.log:\n%s", ciScript, r.stdout, log)
		}
	})
	return r
}

// assertCILeftNothing: the driver is stopped (no process of it), its socket
// is gone, the root dir is empty, nothing is mounted, the driver's volumes
// were deleted.
func assertCILeftNothing(t *testing.T, r ciRun) {
	t.Helper()
	if _, err := os.Lstat(r.sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the driver's socket %s is still there (%v)", r.sock, err)
	}
	for _, d := range []string{r.root, r.data} {
		if ents, err := os.ReadDir(d); err != nil || len(ents) > 0 {
			t.Errorf("%s: want it empty, has %d entries (%v)", d, len(ents), err)
		}
	}
	if m := mountsUnder(filepath.Dir(r.root)); len(m) > 0 {
		t.Errorf("still mounted: %v", m)
	}
	if procs := processesNaming(r.sock); len(procs) > 0 {
		t.Errorf("processes still running with %s in their command line or environment: %v", r.sock, procs)
	}
}

// junitSuites is the part of a JUnit file a CI's test report reads.
type junitSuites struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Skipped  int `xml:"skipped,attr"`
	Suites   []struct {
		Cases []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitSuites {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the JUnit file: %v", err)
	}
	var j junitSuites
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s is not JUnit XML: %v", path, err)
	}
	return j
}

// TestCIRecipe: the script passes the reference driver, with a JUnit file
// and an HTML report that say so, and leaves nothing; a driver that fails a
// call fails the job (exit 1) with the failure in both files; a driver
// started beside another process is stopped with it; a driver that does
// not start is exit 3 without a conformance run.
func TestCIRecipe(t *testing.T) {
	t.Parallel()
	t.Run("passes", func(t *testing.T) {
		t.Parallel()
		r := runCIScript(t, "")
		if r.code != 0 {
			t.Fatalf("exit %d, want 0", r.code)
		}
		j := readJUnit(t, filepath.Join(r.out, "junit.xml"))
		passed := map[string]bool{}
		for _, s := range j.Suites {
			for _, c := range s.Cases {
				passed[c.Name] = c.Failure == nil && c.Skipped == nil
			}
		}
		for _, want := range []string{"testdriver/declarations", "lifecycle/persistent", "lifecycle/ephemeral", "tokens/volume-context", "node/unpublish-removes-target"} {
			if !passed[want] {
				t.Errorf("JUnit: scenario %s did not pass (cases: %v)", want, passed)
			}
		}
		if j.Failures != 0 || j.Tests < 15 {
			t.Errorf("JUnit: %d tests, %d failures; want every scenario, none failed", j.Tests, j.Failures)
		}
		html, err := os.ReadFile(filepath.Join(r.out, "report.html"))
		if err != nil {
			t.Fatalf("the HTML report: %v", err)
		}
		want := strconv.Itoa(j.Tests-j.Skipped) + " passed, 0 failed, " + strconv.Itoa(j.Skipped) + " skipped"
		if !strings.Contains(string(html), want) || !strings.Contains(string(html), refDriverName) {
			t.Errorf("report.html does not say %q for %s", want, refDriverName)
		}
		if txt, _ := os.ReadFile(filepath.Join(r.out, "conformance.txt")); !strings.Contains(string(txt), "result      PASS") {
			t.Errorf("conformance.txt has no PASS result:\n%s", txt)
		}
		assertCILeftNothing(t, r)
	})
	t.Run("driver-fails", func(t *testing.T) {
		t.Parallel()
		r := runCIScript(t, "--fault NodePublishVolume=Internal", "CONFORMANCE_ARGS=--focus ^lifecycle/ --parallel 1")
		if r.code != 1 {
			t.Fatalf("exit %d, want 1 (the driver failed a call)", r.code)
		}
		j := readJUnit(t, filepath.Join(r.out, "junit.xml"))
		if j.Failures == 0 {
			t.Errorf("JUnit: no failure recorded for a driver that fails NodePublishVolume")
		}
		if html, _ := os.ReadFile(filepath.Join(r.out, "report.html")); !regexp.MustCompile(`[1-9]\d* failed`).Match(html) {
			t.Errorf("report.html does not say a scenario failed")
		}
		assertCILeftNothing(t, r)
	})
	t.Run("driver-in-a-wrapper", func(t *testing.T) {
		// DRIVER_CMD starts the driver beside another process (as a
		// wrapper script or a sidecar would): both are stopped.
		t.Parallel()
		r := runCIScript(t, "& exec sleep 600", "CONFORMANCE_ARGS=--focus ^registration/")
		if r.code != 0 {
			t.Fatalf("exit %d, want 0", r.code)
		}
		assertCILeftNothing(t, r)
	})
	t.Run("driver-does-not-start", func(t *testing.T) {
		t.Parallel()
		r := runCIScript(t, "--no-such-flag")
		if r.code != 3 {
			t.Fatalf("exit %d, want 3 (the environment: no driver)", r.code)
		}
		if !strings.Contains(r.stdout, "the driver exited before it made") {
			t.Errorf("output does not say the driver exited:\n%s", r.stdout)
		}
		if _, err := os.Stat(filepath.Join(r.out, "junit.xml")); err == nil {
			t.Errorf("a JUnit file was written although conformance never ran")
		}
		assertCILeftNothing(t, r)
	})
}

// TestCIRecipeWorkflow: the GitHub Actions example runs the same script,
// with only the variables the script reads, passed through sudo, and uploads
// the directory the script writes: the two cannot drift apart.
func TestCIRecipeWorkflow(t *testing.T) {
	b, err := os.ReadFile(repoFile(t, "examples/github-actions/csi-conformance.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string            `json:"name"`
				Uses string            `json:"uses"`
				Run  string            `json:"run"`
				Env  map[string]string `json:"env"`
				With map[string]string `json:"with"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("the workflow: %v", err)
	}
	script, err := os.ReadFile(repoFile(t, ciScript))
	if err != nil {
		t.Fatal(err)
	}
	runs, uploads := 0, 0
	var outDir string
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			if strings.HasPrefix(st.Uses, "actions/upload-artifact@") {
				uploads++
				if outDir != "" && strings.TrimSuffix(st.With["path"], "/") != outDir {
					t.Errorf("step %q uploads %q, the script writes to OUT_DIR=%q", st.Name, st.With["path"], outDir)
				}
				continue
			}
			if !strings.Contains(st.Run, ciScript) {
				continue
			}
			runs++
			outDir = st.Env["OUT_DIR"]
			if outDir == "" {
				t.Errorf("step %q sets no OUT_DIR", st.Name)
			}
			for k := range st.Env {
				if !strings.Contains(string(script), "${"+k) && !strings.Contains(string(script), "$"+k) {
					t.Errorf("step %q sets %s, which %s does not read", st.Name, k, ciScript)
				}
				if strings.HasPrefix(st.Run, "sudo ") && !strings.Contains(st.Run, k) {
					t.Errorf("step %q runs the script with sudo without passing %s through", st.Name, k)
				}
			}
		}
	}
	if runs != 1 || uploads != 1 {
		t.Errorf("the workflow runs %s in %d steps and uploads in %d; want one each, the script's step before the upload", ciScript, runs, uploads)
	}
}
