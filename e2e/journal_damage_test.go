package e2e

// Damaged journals and lock files (issue 28): a torn last record, a FIFO
// where a journal or the lock should be, a journal line over 1 MiB. Each
// ends with a clear message and an exit code, never a hang, and nothing
// foreign is written or removed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// jdBounded runs the simulator with its own deadline: a run that hangs is
// killed and reported as hung, with what it printed so far.
func jdBounded(t *testing.T, d time.Duration, args ...string) simResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, simBin(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := simResult{Args: args, Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("hung: killed after %v\n%s", d, r)
	}
	return r
}

// TestJournalTornLastRecord: the staged sample's run is killed before each
// journal record N in turn, and the journal then gets the first half of
// record N, as a kill during its write leaves it: its action never
// happened. (Record N is taken from a run killed before N+1, on a root dir
// of its own, cleaned up first: two volumes of one handle must not be
// mounted at once.) `cleanup` takes the torn record as such: exit 0,
// nothing left, no record refused as forged (a genuine journal killed
// between a mount intent and its vol_data.json record has none), and a
// second `cleanup` has nothing to do.
func TestJournalTornLastRecord(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work)
	ep := "unix://" + drv.Sock
	run := func(step int, root string) (bool, simResult) {
		return jkRun(t, step, "run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root,
			"--node-name", simNode, "--volume-stats-agg-period", "0")
	}
	torn := 0
	for step := 2; step < 400; step++ {
		ref := filepath.Join(work, fmt.Sprintf("ref-%03d", step))
		killed, r := run(step+1, ref)
		if !killed {
			wantCode(t, r, 0)
			break
		}
		lines := strings.SplitAfter(jkJournal(t, ref), "\n")
		if len(lines) < step {
			t.Fatalf("killed before record %d: the journal has %d lines", step+1, len(lines))
		}
		if c := runSim(t, "cleanup", "--root-dir", ref, "--endpoint", ep, "--node-name", simNode); c.Code != 0 {
			t.Fatalf("killed before record %d: cleanup:\n%s", step+1, c)
		}
		root := filepath.Join(work, fmt.Sprintf("root-%03d", step))
		if killed, r := run(step, root); !killed {
			t.Fatalf("not killed before record %d:\n%s", step, r)
		}
		rec := strings.ReplaceAll(lines[step-1], ref, root)
		jdAppend(t, root, rec[:len(rec)/2])
		torn++
		jdCleanupClean(t, fmt.Sprintf("record %d torn", step), root, work, ep)
		if t.Failed() {
			return
		}
	}
	if left := append(mountsUnder(work), fltLoopsUnder(work)...); len(left) > 0 {
		t.Errorf("left after the last cleanup: %v", left)
	}
	if torn < 10 {
		t.Fatalf("only %d torn journals: the hook is not working", torn)
	}
	t.Logf("staged: the journal torn in each of %d records; cleanup finished every time", torn)
}

// jdCleanupClean runs `cleanup` on root: exit 0, no record refused, nothing
// left, and a second one has nothing to do.
func jdCleanupClean(t *testing.T, what, root, work, ep string) {
	t.Helper()
	c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
	if c.Code != 0 {
		t.Errorf("%s: cleanup exit %d\n%s", what, c.Code, c)
	}
	if strings.Contains(c.String(), "refused, not touched") {
		t.Errorf("%s: a genuine journal's record refused as forged:\n%s", what, c)
	}
	// The next step's run, killed, is still there: only this root is
	// looked at here, the whole work dir at the end.
	var left []string
	for _, l := range simOwnLeft(root) {
		if l != "path "+root {
			left = append(left, l)
		}
	}
	if m := mountsUnder(root); len(m) > 0 || len(left) > 0 {
		t.Errorf("%s: left after cleanup: %v, mounts %v\n%s", what, left, m, c)
	}
	again := runSim(t, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
	if again.Code != 0 || !strings.Contains(again.Stdout, "nothing to do") {
		t.Errorf("%s: a second cleanup has something to do:\n%s", what, again)
	}
}

// jdAppend appends s to the journal under root.
func jdAppend(t *testing.T, root, s string) {
	t.Helper()
	js, _ := filepath.Glob(filepath.Join(root, ".csi-kubelet-sim", "*.journal"))
	if len(js) != 1 {
		t.Fatalf("%s: %d journals", root, len(js))
	}
	f, err := os.OpenFile(js[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestJournalFIFONoHang: a FIFO named like a journal (nobody writes to it)
// makes `cleanup` and `run` stop at once with a one-line error naming it,
// exit 2 (cleanup) or 3 (run: an earlier run's journal is there), not hang
// in its open; the FIFO stays.
func TestJournalFIFONoHang(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work)
	ep := "unix://" + drv.Sock
	root := filepath.Join(work, "root")
	fifo := filepath.Join(root, ".csi-kubelet-sim", "run-1-1.journal")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := jdBounded(t, 60*time.Second, "cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode)
	wantCode(t, c, 2)
	oneLineError(t, c, fifo, "is a FIFO")
	if _, err := os.Lstat(filepath.Join(root, ".csi-kubelet-sim", "lock")); err == nil {
		t.Error("the refused cleanup left its lock file")
	}
	r := jdBounded(t, 60*time.Second, "run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root, "--node-name", simNode)
	wantCode(t, r, 3)
	oneLineError(t, r, "earlier run")
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is gone or changed: %v %v", fi, err)
	}
}

// TestLockFileForeign: the lock file is a hard link to a file outside the
// root dir, or a FIFO: `run` and `cleanup` refuse with exit 2 naming it,
// the foreign file keeps its content, the FIFO stays.
func TestLockFileForeign(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work)
	ep := "unix://" + drv.Sock
	for _, kind := range []string{"hardlink", "fifo"} {
		t.Run(kind, func(t *testing.T) {
			root := filepath.Join(work, kind)
			lock := filepath.Join(root, ".csi-kubelet-sim", "lock")
			if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
				t.Fatal(err)
			}
			precious := filepath.Join(work, kind+"-precious")
			const content = "precious data\n"
			if kind == "hardlink" {
				if err := os.WriteFile(precious, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(precious, lock); err != nil {
					t.Fatal(err)
				}
			} else if err := unix.Mkfifo(lock, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"run", "-f", sample(t, "staged"), "--endpoint", ep, "--root-dir", root, "--node-name", simNode},
				{"cleanup", "--root-dir", root, "--endpoint", ep, "--node-name", simNode},
			} {
				r := jdBounded(t, 60*time.Second, args...)
				wantCode(t, r, 2)
				oneLineError(t, r, lock)
				if strings.Contains(r.Stderr, "invalid argument") {
					t.Errorf("%s: an opaque error:\n%s", args[0], r)
				}
			}
			if kind == "hardlink" {
				if got := readFile(precious); got != content {
					t.Errorf("the foreign file now holds %q", got)
				}
			} else if fi, err := os.Lstat(lock); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("the FIFO at the lock path is gone or changed: %v %v", fi, err)
			}
		})
	}
}

// TestJournalLineOverBound: a journal with a 2 MiB line is damaged:
// `cleanup` refuses it with one line naming the file and the line, exit 2,
// and leaves it.
func TestJournalLineOverBound(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work)
	root := filepath.Join(work, "root")
	j := filepath.Join(root, ".csi-kubelet-sim", "run-1-1.journal")
	if err := os.MkdirAll(filepath.Dir(j), 0o700); err != nil {
		t.Fatal(err)
	}
	body := `{"k":"run","pid":1,"cmd":"run"}` + "\n" + `{"k":"dir","p":"` + strings.Repeat("a", 2<<20) + `"}` + "\n"
	if err := os.WriteFile(j, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := jdBounded(t, 60*time.Second, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
	wantCode(t, c, 2)
	oneLineError(t, c, j, "line 2 is longer than 1 MiB")
	if readFile(j) != body {
		t.Error("the damaged journal was changed")
	}
	if _, err := os.Lstat(filepath.Join(root, ".csi-kubelet-sim", "lock")); err == nil {
		t.Error("the refused cleanup left its lock file")
	}
}

// TestJournalHeaderLivePIDNoTicks: a journal whose header names a live
// process (PID 1) without its start time, and no process holds its flock:
// its writer is gone, so `cleanup` finishes it (it used to refuse it as a
// live run, for good).
func TestJournalHeaderLivePIDNoTicks(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work)
	root := filepath.Join(work, "root")
	j := filepath.Join(root, ".csi-kubelet-sim", "run-1-1.journal")
	if err := os.MkdirAll(filepath.Dir(j), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j, []byte(`{"k":"run","pid":1,"cmd":"run"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := jdBounded(t, 60*time.Second, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
	wantCode(t, c, 0)
	if _, err := os.Lstat(j); err == nil {
		t.Errorf("the journal is still there:\n%s", c)
	}
}

// TestSidecarsRecordFIFONoHang: a FIFO named like the simulated sidecars'
// record makes `cleanup` stop with an error naming it, not hang; it stays.
func TestSidecarsRecordFIFONoHang(t *testing.T) {
	work := fltWork(t)
	drv := fltStartRef(t, work)
	root := filepath.Join(work, "root")
	fifo := filepath.Join(root, ".csi-kubelet-sim", "sidecars-1.controller")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := jdBounded(t, 60*time.Second, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
	if c.Code == 0 || !strings.Contains(c.Stderr, fifo) || !strings.Contains(c.Stderr, "not a regular file") {
		t.Errorf("cleanup does not refuse the FIFO by name:\n%s", c)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is gone or changed: %v %v", fi, err)
	}
}
