// Package asuser runs a test of the running test binary again as an
// ordinary user (nobody, uid 65534), to show that what it tests needs no
// root: the binary and the files the test reads are copied into a fresh
// directory that user owns, which is also the run's HOME and TMPDIR.
package asuser

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// UID is the ordinary user (and group) of the run.
const UID = 65534

// dirEnv carries the run's directory to the test run again.
const dirEnv = "CSI_KUBELET_SIM_ASUSER_DIR"

// Dir is the directory of the run as the ordinary user; "" in the
// first run (as root).
func Dir() string { return os.Getenv(dirEnv) }

// Rerun runs the tests that pattern (-test.run) selects again as the
// ordinary user and returns its directory and output; t fails when that
// run fails or does not pass test (a name it must print "--- PASS: " for).
// files are copied into the directory (name there -> path here). env is
// added to the run's environment. Without root it skips t: it cannot
// change user. The directory is removed when t ends.
func Rerun(t *testing.T, pattern, test string, files map[string]string, env ...string) (dir, out string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to run the test again as uid %d", UID)
	}
	dir, err := os.MkdirTemp("", "csi-kubelet-sim-asuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for p := filepath.Dir(dir); p != "/"; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("uid %d cannot reach %s: %s is not searchable by others", UID, dir, p)
		}
	}
	if err := os.Chown(dir, UID, UID); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	copyFile(t, os.Args[0], bin)
	for name, from := range files {
		copyFile(t, from, filepath.Join(dir, name))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run="+pattern, "-test.v", "-test.count=1", "-test.timeout=4m")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOCOVERDIR=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, dirEnv+"="+dir, "HOME="+dir, "TMPDIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	// Its own process group, killed whole: a driver the run started
	// must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: UID, Gid: UID, Groups: []uint32{}},
		Setpgid:    true,
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	out = buf.String()
	t.Logf("as uid %d:\n%s", UID, out)
	if err != nil {
		t.Fatalf("the run as uid %d failed: %v", UID, err)
	}
	if !strings.Contains(out, "--- PASS: "+test) {
		t.Fatalf("the run as uid %d did not pass %s", UID, test)
	}
	return dir, out
}

// copyFile copies from to a new file to, readable and executable by all.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, in); err != nil {
		w.Close()
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
