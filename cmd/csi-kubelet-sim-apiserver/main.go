// Command csi-kubelet-sim-apiserver is the control plane of
// `csi-kubelet-sim --apiserver`: it starts etcd (an executable of its own,
// Debian's etcd-server) on unix sockets in its working dir (or loopback
// ports), waits for it, then runs kube-apiserver
// of the release the simulator follows in this process, with the flags the
// simulator gives after "--". The simulator makes every file (CA, keys,
// certificates) and picks the ports; this program only runs the two servers.
//
// Lifetime: the simulator starts it with a parent-death signal, and etcd
// gets one from this process, so a kill -9 of the simulator takes both
// down. On SIGTERM kube-apiserver shuts down, then etcd is stopped; on
// SIGUSR1 both end at once.
// kube-apiserver's code costs its size and start-up only to the runs that
// ask for it, which is why it lives here and not in csi-kubelet-sim.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // as kube-apiserver's main: client-go's metrics
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// exitEtcd is the exit code when etcd failed to start or died: the
// simulator tells it from the API server's own failures.
const exitEtcd = 4

type etcdFlags struct {
	bin, dataDir, log string
	clientPort, peer  int
	// clientSocket and peerSocket are unix sockets in the helper's working
	// dir (the simulator's 0700 control plane dir), named as etcd 3.4
	// wants a unix URL's host: NAME:PORT. Given, etcd listens on no TCP
	// port at all: only a process that can enter that dir (root, the API
	// server) reaches its keys.
	clientSocket, peerSocket string
	wait                     time.Duration
}

// urls are etcd's client and peer URLs, and how to dial the client one.
func (e etcdFlags) urls() (client, peer string, dial func(ctx context.Context, _, _ string) (net.Conn, error)) {
	if e.clientSocket != "" {
		sock := e.clientSocket
		return "unix://" + e.clientSocket, "unix://" + e.peerSocket, func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
	}
	return fmt.Sprintf("http://127.0.0.1:%d", e.clientPort), fmt.Sprintf("http://127.0.0.1:%d", e.peer), nil
}

func main() {
	var e etcdFlags
	fs := flag.NewFlagSet("csi-kubelet-sim-apiserver", flag.ExitOnError)
	fs.StringVar(&e.bin, "etcd", "/usr/bin/etcd", "the etcd executable")
	fs.StringVar(&e.dataDir, "etcd-data-dir", "", "etcd's data dir (made by etcd)")
	fs.StringVar(&e.log, "etcd-log", "", "etcd's log file")
	fs.IntVar(&e.clientPort, "etcd-client-port", 0, "etcd's client port on 127.0.0.1")
	fs.IntVar(&e.peer, "etcd-peer-port", 0, "etcd's peer port on 127.0.0.1")
	fs.StringVar(&e.clientSocket, "etcd-client-socket", "", "etcd's client unix socket in the working dir, NAME:PORT (instead of --etcd-client-port)")
	fs.StringVar(&e.peerSocket, "etcd-peer-socket", "", "etcd's peer unix socket in the working dir, NAME:PORT (instead of --etcd-peer-port)")
	fs.DurationVar(&e.wait, "etcd-wait", 30*time.Second, "how long etcd may take to answer /health healthy")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	sockets := e.clientSocket != "" && e.peerSocket != ""
	if e.dataDir == "" || !sockets && (e.clientPort == 0 || e.peer == 0) {
		fmt.Fprintln(os.Stderr, "csi-kubelet-sim-apiserver: --etcd-data-dir and --etcd-client-socket with --etcd-peer-socket (or --etcd-client-port with --etcd-peer-port) are required (the simulator gives them)")
		os.Exit(2)
	}
	etcd, err := startEtcd(e)
	if err != nil {
		fmt.Fprintln(os.Stderr, "csi-kubelet-sim-apiserver:", err)
		os.Exit(exitEtcd)
	}
	// etcd dying (or failing to start) under the API server leaves nothing
	// to serve: exit, which the simulator reports with etcd's log.
	go func() {
		<-etcd.exited
		if !etcd.stopping.Load() {
			fmt.Fprintf(os.Stderr, "csi-kubelet-sim-apiserver: etcd exited: %v (its log: %s)\n", etcd.err, e.log)
			os.Exit(exitEtcd)
		}
	}()
	// kube-apiserver starts beside etcd, not after it: it builds its API
	// groups (a second or more) while etcd comes up, and waits for etcd
	// itself before it serves.
	// SIGUSR1 is the simulator's "done": nothing of the control plane is
	// kept, so no graceful shutdown (seconds for kube-apiserver): etcd is
	// killed and reaped here, so that no zombie outlives the helper, and
	// the helper exits.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		etcd.kill()
		os.Exit(0)
	}()
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(fs.Args())
	code := cli.Run(cmd)
	etcd.stop()
	os.Exit(code)
}

// etcdProcess is the running etcd; exited is closed when it is gone, err
// is then its exit.
type etcdProcess struct {
	cmd      *exec.Cmd
	exited   chan struct{}
	err      error
	stopping atomic.Bool
}

func startEtcd(e etcdFlags) (*etcdProcess, error) {
	client, peer, dial := e.urls()
	cmd := exec.Command(e.bin,
		"--name", "csi-kubelet-sim", "--data-dir", e.dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "csi-kubelet-sim="+peer,
		// A throw-away store: a crash loses nothing anyone needs.
		"--unsafe-no-fsync", "--log-level", "warn")
	if e.log != "" {
		f, err := os.OpenFile(e.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("etcd log: %w", err)
		}
		defer f.Close() // the child holds its own descriptor
		cmd.Stdout, cmd.Stderr = f, f
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start etcd %s: %w", e.bin, err)
	}
	p := &etcdProcess{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	go func() {
		health := client + "/health"
		if dial != nil {
			health = "http://etcd/health"
		}
		if err := p.waitHealthy(health, dial, e.wait); err != nil && !errors.Is(err, errExited) {
			fmt.Fprintf(os.Stderr, "csi-kubelet-sim-apiserver: etcd did not start: %v (its log: %s)\n", err, e.log)
			os.Exit(exitEtcd)
		}
	}()
	return p, nil
}

var errExited = errors.New("etcd exited")

// waitHealthy polls etcd's /health until it answers healthy, etcd exits,
// or the time is up. A port another etcd holds makes ours exit, so a
// healthy answer comes from our process.
func (p *etcdProcess) waitHealthy(url string, dial func(ctx context.Context, _, _ string) (net.Conn, error), wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	if dial != nil {
		hc.Transport = &http.Transport{DialContext: dial}
	}
	for {
		select {
		case <-p.exited:
			return errExited // the watchdog reports it
		case <-ctx.Done():
			return fmt.Errorf("no healthy /health in %s", wait)
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := hc.Get(url)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
}

// kill ends etcd at once and waits for it.
func (p *etcdProcess) kill() {
	p.stopping.Store(true)
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop ends etcd: SIGTERM, then SIGKILL after 5 s.
func (p *etcdProcess) stop() {
	p.stopping.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}
