package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// connectEnv makes the test binary, run as another user, try to connect
// to the unix socket it names and exit 0 only if it could.
const connectEnv = "CSI_KUBELET_SIM_TEST_CONNECT"

func TestMain(m *testing.M) {
	if sock := os.Getenv(connectEnv); sock != "" {
		c, err := net.Dial("unix", sock)
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestControlPlaneClosedToOthers: etcd (every object of the input,
// Secrets included, and no authentication of its own) listens on no TCP
// port; its socket is in the 0700 control plane dir, and another user's
// connection to it fails. The API server refuses an anonymous request
// with 401.
func TestControlPlaneClosedToOthers(t *testing.T) {
	needHelper(t)
	// A root dir every user may enter, so that only the control plane's
	// own dirs can keep another user out.
	root, err := os.MkdirTemp("", "ksim-closed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	_ = os.Chmod(root, 0o755)
	cp := startForTest(t, Config{Root: root})

	pool := x509.NewCertPool()
	ca, err := os.ReadFile(cp.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, path := range []string{"/api/v1/namespaces/default/secrets", "/readyz", "/version"} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, cp.URL+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("anonymous GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous GET %s: %d, want 401", path, resp.StatusCode)
		}
	}

	etcd := childOf(t, cp.helper.cmd.Process.Pid, "etcd")
	if ls := tcpListeners(t, etcd); len(ls) > 0 {
		t.Errorf("etcd (PID %d) listens on TCP: %v", etcd, ls)
	}
	socks, _ := filepath.Glob(filepath.Join(cp.Dir, "etcd-client*"))
	if len(socks) != 1 {
		t.Fatalf("etcd's client sockets in %s: %v, want one", cp.Dir, socks)
	}
	sock := socks[0]
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("no etcd socket at %s: %v", sock, err)
	}
	if fi, err := os.Stat(cp.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("control plane dir %s: %v, want mode 0700", cp.Dir, fi.Mode())
	}
	if os.Geteuid() == 0 {
		// The control: the same user connects to a socket open to all,
		// so a refusal below is the control plane dir's doing.
		openDir, err := os.MkdirTemp("", "ksim-open-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(openDir)
		_ = os.Chmod(openDir, 0o755)
		open := filepath.Join(openDir, "open.sock")
		l, err := net.Listen("unix", open)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		_ = os.Chmod(open, 0o777)
		if err := connectAs(t, open, 65534); err != nil {
			t.Fatalf("control: user 65534 cannot connect to a socket open to all: %v", err)
		}
		if err := connectAs(t, sock, 65534); err == nil {
			t.Errorf("user 65534 connected to etcd's socket %s", sock)
		} else {
			t.Logf("user 65534: %v", err)
		}
	}

}

// childOf is the child of pid whose command is name (from the kernel's
// list of pid's children, no search of all processes).
func childOf(t *testing.T, pid int, name string) int {
	t.Helper()
	files, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			c, _ := strconv.Atoi(s)
			comm, _ := os.ReadFile("/proc/" + s + "/comm")
			if strings.TrimSpace(string(comm)) == name {
				return c
			}
		}
	}
	t.Fatalf("no %s under PID %d", name, pid)
	return 0
}

// tcpListeners are the TCP sockets pid listens on ("addr:port" in hex).
func tcpListeners(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/net/" + table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) > 9 && fs[3] == "0A" && inodes[fs[9]] {
				out = append(out, fs[1])
			}
		}
		f.Close()
	}
	return out
}

// connectAs runs a copy of the test binary as uid, which connects to sock.
func connectAs(t *testing.T, sock string, uid uint32) error {
	t.Helper()
	dir, err := os.MkdirTemp("", "ksim-connect-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "connect")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{connectEnv + "=" + sock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run as %d: %v", uid, err)
		}
		return errors.New(string(out))
	}
	return nil
}

// TestControlPlaneLongRoot: etcd's sockets are named relative to the
// control plane dir, so a root dir whose socket paths would pass the
// 108 bytes of a unix socket address still starts.
func TestControlPlaneLongRoot(t *testing.T) {
	needHelper(t)
	root := filepath.Join(t.TempDir(), strings.Repeat("a-rather-long-directory-name-", 5))
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if n := len(filepath.Join(Dir(root), etcdClientSocket)); n <= 108 {
		t.Fatalf("the socket path is %d bytes: not long enough to test", n)
	}
	cp := startForTest(t, Config{Root: root})
	if err := cp.admin.do(context.Background(), http.MethodGet, "/api/v1/namespaces/default", nil, nil); err != nil {
		t.Fatalf("admin reads namespace default: %v", err)
	}
}
