package realkubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is one component of the stack, logging to its own file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProcess starts bin in dir; the cleanup stops it (SIGTERM, then
// SIGKILL after 10 s) and waits for it. It dies with the test binary too
// (Pdeathsig), so that nothing outlives an interrupted test.
func startProcess(t *testing.T, logDir, name, dir, bin string, args ...string) *process {
	p := launch(t, logDir, name, dir, bin, args...)
	t.Cleanup(func() { p.stop(t) })
	return p
}

// launch is startProcess without the cleanup: the caller stops it.
func launch(t *testing.T, logDir, name, dir, bin string, args ...string) *process {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p
}

// logSince is the process's log from offset on, and the offset of its end.
func (p *process) logSince(offset int) (string, int) {
	b, _ := os.ReadFile(p.log)
	if offset > len(b) {
		offset = len(b)
	}
	return string(b[offset:]), len(b)
}

func (p *process) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Logf("%s did not stop on SIGTERM in 10s: killing it", p.name)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail is the end of the process's log.
func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n loopback ports free right now.
func freePorts(t *testing.T, n int) []int {
	var ls []net.Listener
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// waitFor polls ready until it returns nil, p exits or the timeout passes;
// the time it took is returned.
func waitFor(ctx context.Context, p *process, what string, timeout time.Duration, ready func(context.Context) error) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if p != nil && p.exited() {
			return 0, fmt.Errorf("%s: %s exited; its log ends:\n%s", what, p.name, p.tail(30))
		}
		if last = ready(ctx); last == nil {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			if p != nil {
				return 0, fmt.Errorf("%s not after %s: %v; %s's log ends:\n%s", what, timeout, last, p.name, p.tail(30))
			}
			return 0, fmt.Errorf("%s not after %s: %v", what, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// httpOK is a readiness check: GET url answers 200 (with the bearer token,
// if any, and without verifying the server's self-signed certificate: the
// stack is on loopback only), and the body holds want.
func httpOK(url, token, want string) func(context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // loopback, the stack's own certificate
	}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(buf[:n])))
		}
		if want != "" && !strings.Contains(string(buf[:n]), want) {
			return errors.New("unexpected answer: " + string(buf[:n]))
		}
		return nil
	}
}
