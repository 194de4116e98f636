package cluster

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needHelper skips when the helper or etcd is not there: `make
// apiserver-helper` builds the one, etcd-server the other (make test has
// both).
func needHelper(t *testing.T) {
	t.Helper()
	if _, err := HelperPath(); err != nil {
		t.Skip(err)
	}
	if _, err := EtcdPath(); err != nil {
		t.Skip(err)
	}
}

func startForTest(t *testing.T, cfg Config) *ControlPlane {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	if cfg.NodeName == "" {
		cfg.NodeName = "sim-node"
	}
	cp, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	return cp
}

func TestControlPlaneStartsAndStopsLeavingNothing(t *testing.T) {
	needHelper(t)
	cp := startForTest(t, Config{})
	t.Logf("start-up %s", cp.StartUp)
	if err := cp.admin.do(context.Background(), http.MethodGet, "/api/v1/namespaces/default", nil, nil); err != nil {
		t.Fatalf("admin reads namespace default: %v", err)
	}
	// The kubelet's certificate is a node's: the Node authorizer does not
	// let it list secrets.
	if err := cp.kubelet.do(context.Background(), http.MethodGet, "/api/v1/namespaces/default/secrets", nil, nil); statusCode(err) != http.StatusForbidden {
		t.Errorf("the kubelet's credential lists secrets: %v; want 403", err)
	}
	pid := cp.helper.cmd.Process.Pid
	port := strings.TrimPrefix(cp.URL, "https://")
	cp.Stop()
	if _, err := os.Stat(cp.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control plane dir left: %v", err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("a process of the helper's group %d is left: %v", pid, err)
	}
	if c, err := net.DialTimeout("tcp", port, time.Second); err == nil {
		c.Close()
		t.Errorf("something still listens on %s", port)
	}
}

// A port another process holds: the API server cannot bind it, the start
// fails with the reason, and nothing is left.
func TestControlPlanePortTaken(t *testing.T) {
	needHelper(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	root := t.TempDir()
	_, err = Start(context.Background(), Config{Root: root, NodeName: "n", Port: l.Addr().(*net.TCPAddr).Port, Wait: 30 * time.Second})
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a StartError", err)
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("err = %v, want the reason (address already in use)", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".csi-kubelet-sim", "apiserver")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control plane dir left: %v", err)
	}
}

// After a kill -9 of the simulator, cleanup finds the control plane's dir
// (the helper died with its parent) and removes it.
func TestLeftoverRemoved(t *testing.T) {
	root := t.TempDir()
	dir := Dir(root)
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writePID(dir, 999999999); err != nil {
		t.Fatal(err)
	}
	l, err := FindLeftover(root)
	if err != nil || l == nil {
		t.Fatalf("FindLeftover = %v, %v", l, err)
	}
	if l.PID != 0 {
		t.Errorf("PID = %d for a process that does not exist", l.PID)
	}
	if err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir left: %v", err)
	}
}
