package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopSignals: SIGHUP (the terminal or SSH session closed), SIGQUIT
// (Ctrl-\) and SIGTERM sent to the process group of a run held forever
// end it as an interrupt (README, "Exit codes"): the volume is
// unpublished and unstaged, nothing is left under the work dir (no mount,
// no root dir, no socket), exit 130. SIGQUIT prints the goroutine dump
// first.
func TestStopSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM} {
		t.Run(strings.TrimPrefix(sigName(sig), "SIG"), func(t *testing.T) {
			work := workDir(t)
			drv := startRefDriver(t, work)
			root := filepath.Join(work, "root")
			sim := startSimInGroup(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock,
				"--root-dir", root, "--node-name", simNode, "--hold", "forever", "--volume-stats-agg-period", "0", "-o", "json")
			waitMounted(t, targetPath(root, stagedUID, "pv-data"), 20*time.Second, sim.exited)
			if err := syscall.Kill(-sim.cmd.Process.Pid, sig); err != nil {
				t.Fatal(err)
			}
			r := sim.wait(t, simTimeout)
			wantCode(t, r, 130)
			if sig == syscall.SIGQUIT {
				if !strings.Contains(r.Stderr, "goroutine 1 [") {
					t.Errorf("SIGQUIT: no goroutine dump on stderr:\n%.2000s", r.Stderr)
				}
				r.Stderr = lastLine(r.Stderr) + "\n"
			}
			oneLineError(t, r, "interrupted")
			var unstaged bool
			for _, c := range calls(parseTrace(t, r)) {
				if c.Method == "NodeUnstageVolume" && c.Code == "OK" {
					unstaged = true
				}
			}
			if !unstaged {
				t.Errorf("no NodeUnstageVolume OK after %s:\n%s", sigName(sig), r)
			}
			assertNothingLeft(t, root, work)
			assertNoSocketsUnder(t, work, drv.Sock)
		})
	}
}

// TestHangupDuringAPIServerStart: SIGHUP to the run's process group
// while kube-apiserver is still starting: the start-up is cut short, the
// control plane (its helper, etcd, their dir with the run's keys) is
// stopped and removed, exit 130.
func TestHangupDuringAPIServerStart(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	sim := startSimInGroup(t, "run", "--apiserver", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock,
		"--root-dir", root, "--node-name", simNode)
	// The helper's record is written once it runs: the start-up has begun,
	// and /readyz is seconds away.
	pid := filepath.Join(root, ".csi-kubelet-sim", "apiserver", "helper.pid")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(pid); err == nil {
			break
		}
		select {
		case <-sim.exited:
			t.Fatalf("ended before the control plane started\n%s", sim.wait(t, time.Second))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no control plane after 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(-sim.cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r := sim.wait(t, simTimeout)
	wantCode(t, r, 130)
	oneLineError(t, r, "interrupted")
	assertNoControlPlane(t, root)
	assertNothingLeft(t, root, work)
	assertNoSocketsUnder(t, work, drv.Sock)
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// assertNoSocketsUnder: no unix socket under dir but the driver's own.
func assertNoSocketsUnder(t *testing.T, dir string, except ...string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if fi.Mode()&os.ModeSocket != 0 {
			for _, e := range except {
				if p == e {
					return nil
				}
			}
			t.Errorf("socket left: %s", p)
		}
		return nil
	})
}
