package cluster

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// Config is what the control plane is made for.
type Config struct {
	// Root is the kubelet root dir: the control plane lives in
	// <root>/.csi-kubelet-sim/apiserver, where `cleanup` finds it after a
	// kill -9 of the simulator.
	Root string
	// NodeName is the node whose kubelet credential is made.
	NodeName string
	// Issuer and APIAudiences are the API server's service-account flags;
	// SigningKey signs its tokens (the simulator's issuer's key, so that
	// `tokens verify` accepts them).
	Issuer       string
	APIAudiences []string
	SigningKey   crypto.Signer
	// Port is the API server's port on 127.0.0.1; 0 picks a free one.
	Port int
	// Wait is how long to wait for the API server's /readyz (default 60 s).
	Wait time.Duration
}

// ControlPlane is a running API server on etcd.
type ControlPlane struct {
	URL      string
	Dir      string // everything of the control plane: keys, etcd's data, logs
	CAFile   string
	AuditLog string // the API server's audit log (JSON lines)
	Log      string // the helper's log: kube-apiserver's, then the helper's last words
	EtcdLog  string
	// Admin is system:masters; Kubelet is system:node:<node>, as a
	// kubelet's client certificate.
	Admin, Kubelet Credential
	StartUp        time.Duration
	// Version is the helper's kube-apiserver release (HelperVersion), ""
	// when unknown.
	Version string
	// Warnings are the API server's warnings to Admin's and Kubelet's
	// clients.
	Warnings *Warnings

	helper         *process
	driverCert     [2]string
	admin, kubelet *client
}

// DriverAdmin is the driver's user name when it is cluster-admin.
const DriverAdmin = "csi-kubelet-sim-driver"

// StartError is a control plane that did not come up: the helper or etcd
// exited, or /readyz never answered. An environment problem (exit 3).
type StartError struct {
	What string
	Log  string
}

func (e *StartError) Error() string {
	if e.Log == "" {
		return "the API server did not start: " + e.What
	}
	return fmt.Sprintf("the API server did not start: %s (log: %s)", e.What, e.Log)
}

// etcd's unix sockets in the control plane dir, named as etcd 3.4 wants a
// unix URL's host (NAME:PORT; the port means nothing).
const (
	etcdClientSocket = "etcd-client:2379"
	etcdPeerSocket   = "etcd-peer:2380"
)

// Dir is where the control plane of a run on root lives.
func Dir(root string) string { return filepath.Join(root, ".csi-kubelet-sim", "apiserver") }

// Start makes the run's CA, keys and credentials, starts the helper and
// waits until the API server is ready. On failure nothing is left: no
// process, no directory.
func Start(ctx context.Context, cfg Config) (cp *ControlPlane, err error) {
	started := time.Now()
	helperBin, err := HelperPath()
	if err != nil {
		return nil, err
	}
	etcdBin, err := EtcdPath()
	if err != nil {
		return nil, err
	}
	dir := Dir(cfg.Root)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("control plane dir: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s exists: a control plane of an earlier run is left there; `csi-kubelet-sim cleanup --root-dir %s` stops and removes it", dir, cfg.Root)
		}
		return nil, fmt.Errorf("control plane dir: %w", err)
	}
	cp = &ControlPlane{Dir: dir, Version: HelperVersion(helperBin)}
	defer func() {
		if err != nil {
			cp.Stop()
			cp = nil
		}
	}()
	files, err := writeFiles(dir, cfg)
	if err != nil {
		return cp, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return cp, err
	}
	if cfg.Port != 0 {
		ports[0] = cfg.Port
	}
	cp.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	cp.CAFile, cp.AuditLog = files.ca, filepath.Join(dir, "audit.log")
	cp.Log, cp.EtcdLog = filepath.Join(dir, "apiserver.log"), filepath.Join(dir, "etcd.log")
	cp.Warnings = &Warnings{}
	cp.Admin = Credential{Cert: files.admin[0], Key: files.admin[1]}
	cp.Kubelet = Credential{Cert: files.kubelet[0], Key: files.kubelet[1]}
	if cp.admin, err = newClient(cp.URL, files.ca, cp.Admin, cp.Warnings); err != nil {
		return cp, err
	}
	if cp.kubelet, err = newClient(cp.URL, files.ca, cp.Kubelet, cp.Warnings); err != nil {
		return cp, err
	}
	cp.driverCert = files.driver
	// etcd holds every object of the input, Secrets included, and has no
	// authentication of its own here: it listens on unix sockets in the
	// 0700 control plane dir only (the helper runs there), which no other
	// user can enter; no TCP port of it exists. The API server (in the
	// helper, whose working dir that is) dials it by its relative name: an
	// absolute one under a long root dir passes the 108 bytes of a unix
	// socket address.
	args := append([]string{"--etcd", etcdBin, "--etcd-data-dir", filepath.Join(dir, "etcd"), "--etcd-log", cp.EtcdLog,
		"--etcd-client-socket", etcdClientSocket, "--etcd-peer-socket", etcdPeerSocket, "--"},
		apiserverArgs(cfg, files, "unix://"+etcdClientSocket, ports[0], cp.AuditLog)...)
	if cp.helper, err = startProcess(helperBin, args, cp.Log, dir); err != nil {
		return cp, &StartError{What: err.Error()}
	}
	if err := cp.waitReady(ctx, cfg.Wait); err != nil {
		return cp, err
	}
	cp.StartUp = time.Since(started)
	return cp, nil
}

// files are the paths writeFiles made.
type files struct {
	ca, saKey, saPub, serving, servingKey, policy string
	admin, kubelet, driver                        [2]string // cert, key
}

func writeFiles(dir string, cfg Config) (files, error) {
	var f files
	ca, err := newAuthority()
	if err != nil {
		return f, err
	}
	f.ca = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(f.ca, ca.pem, 0o600); err != nil {
		return f, err
	}
	serving, err := ca.serving()
	if err != nil {
		return f, err
	}
	if f.serving, f.servingKey, err = serving.write(dir, "apiserver"); err != nil {
		return f, err
	}
	for _, c := range []struct {
		name   string
		user   string
		groups []string
		dst    *[2]string
	}{
		{"admin", "csi-kubelet-sim", []string{"system:masters"}, &f.admin},
		{"kubelet", "system:node:" + cfg.NodeName, []string{"system:nodes"}, &f.kubelet},
		// The driver's when the input gives it no ServiceAccount: an admin
		// of its own name, so the audit log tells its requests apart.
		{"driver", DriverAdmin, []string{"system:masters"}, &f.driver},
	} {
		kp, err := ca.client(c.user, c.groups...)
		if err != nil {
			return f, err
		}
		if c.dst[0], c.dst[1], err = kp.write(dir, c.name); err != nil {
			return f, err
		}
	}
	key := cfg.SigningKey
	if key == nil {
		if key, err = tokens.GenerateKey("rsa"); err != nil {
			return f, err
		}
	}
	f.saKey, f.saPub = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := tokens.WriteKeyPair(f.saKey, f.saPub, key); err != nil {
		return f, err
	}
	f.policy = filepath.Join(dir, "audit-policy.yaml")
	return f, os.WriteFile(f.policy, []byte(auditPolicy), 0o600)
}

// auditPolicy records every request at Metadata level (who, verb,
// resource, name, code, time; no bodies, so no secret reaches the log).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`

// apiserverArgs are kube-apiserver's flags: loopback only, the run's CA
// for serving and clients, Node and RBAC authorization as a kubeadm
// cluster, the service-account issuer of the simulator.
// Every flag here exists in kube-apiserver from 1.30 (the oldest release
// simulated) to the newest: TestAPIServerTokenClaimsMatchIssuer starts the
// helpers of both. A flag of a later release must be given by the
// helper's release (ControlPlane.Version), as kube-apiserver refuses a flag
// it does not know.
func apiserverArgs(cfg Config, f files, etcd string, port int, audit string) []string {
	issuer := cfg.Issuer
	if issuer == "" {
		issuer = tokens.DefaultIssuer
	}
	args := []string{
		"--etcd-servers", etcd,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		// Every client of the run has a certificate of its CA or a token:
		// an anonymous request (any local user) gets 401.
		"--anonymous-auth=false",
		"--secure-port", strconv.Itoa(port), "--cert-dir", filepath.Join(filepath.Dir(f.ca), "certs"),
		"--tls-cert-file", f.serving, "--tls-private-key-file", f.servingKey,
		"--client-ca-file", f.ca,
		"--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
		"--service-cluster-ip-range", "10.0.0.0/24", "--endpoint-reconciler-type", "none",
		"--service-account-issuer", issuer,
		"--service-account-key-file", f.saPub, "--service-account-signing-key-file", f.saKey,
		"--audit-policy-file", f.policy, "--audit-log-path", audit, "--audit-log-format", "json",
		"--audit-log-mode", "blocking", "--profiling=false",
		// No API Priority and Fairness: one client, and its bootstrap
		// configuration is a post-start hook /readyz waits for.
		"--enable-priority-and-fairness=false",
	}
	if len(cfg.APIAudiences) > 0 {
		args = append(args, "--api-audiences", strings.Join(cfg.APIAudiences, ","))
	}
	return args
}

// freePorts picks n free ports on loopback. Another process can take one
// before the servers bind it: the server then fails to start, which is
// reported, never mistaken for ours (readiness is checked with the run's
// CA and credentials).
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("a free port on 127.0.0.1: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitReady polls /readyz with the admin's certificate, verified against
// the run's CA, until it answers ok, the helper exits, or time is up.
func (cp *ControlPlane) waitReady(ctx context.Context, wait time.Duration) error {
	if wait <= 0 {
		wait = 60 * time.Second
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-cp.helper.exited:
			return &StartError{What: cp.helper.lastWords(), Log: cp.Log}
		case <-deadline.C:
			return &StartError{What: fmt.Sprintf("/readyz did not answer ok in %s", wait), Log: cp.Log}
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := cp.admin.do(rctx, http.MethodGet, "/readyz", nil, nil)
		cancel()
		if err == nil {
			return nil
		}
	}
}

// ExitedWithin tells whether the helper (kube-apiserver, with etcd) is
// gone or goes within grace: a request that failed meanwhile failed
// because of it (etcd died: the helper exits at once, but its answer to a
// request may come first).
func (cp *ControlPlane) ExitedWithin(grace time.Duration) bool {
	if cp == nil || cp.helper == nil {
		return false
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-cp.helper.exited:
		return true
	case <-t.C:
		return false
	}
}

// Stop ends the helper (kube-apiserver, then etcd) and removes the
// control plane's directory. Safe to call more than once.
func (cp *ControlPlane) Stop() {
	if cp == nil {
		return
	}
	// Nothing of the control plane is kept: no graceful shutdown (which
	// takes kube-apiserver seconds) is worth waiting for. The audit log
	// is complete: it is written before each answer (blocking mode).
	if cp.helper != nil {
		cp.helper.stop(2 * time.Second)
	}
	if cp.Dir != "" {
		_ = os.RemoveAll(cp.Dir)
	}
}
