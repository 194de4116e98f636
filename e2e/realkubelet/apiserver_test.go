package realkubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// helperRelease is the release of the simulator's API server helper
// (bin/csi-kubelet-sim-apiserver, `make apiserver-helper`): kube-apiserver
// of that release in-process, etcd its child. The stack of that release
// uses it, as `csi-kubelet-sim --apiserver` does, instead of a
// kube-apiserver build of its own; another release builds its own.
const helperRelease = "v1.37.2"

// controlPlane is what the kubelet talks to: kube-apiserver and etcd, as
// one process (the helper) or two.
type controlPlane struct {
	apiserver *process // the helper, or kube-apiserver
	url       string
}

// apiserverHelper is the helper binary for this release, "" for none:
// REALKUBELET_APISERVER_HELPER (the Makefile's), default
// ../../bin/csi-kubelet-sim-apiserver at helperRelease.
func apiserverHelper(t *testing.T) string {
	bin := os.Getenv("REALKUBELET_APISERVER_HELPER")
	if bin == "" {
		if kubeVersion() != helperRelease {
			return ""
		}
		bin = "../../bin/csi-kubelet-sim-apiserver"
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("%v (run `make realkubelet`, which builds the API server helper with `make apiserver-helper`)", err)
	}
	return abs
}

// apiserverFlags are kube-apiserver's: loopback, our token, the
// service-account key, AlwaysAllow.
func apiserverFlags(base string, etcdClient, apiPort int, tokens, saKey string) []string {
	return []string{
		"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", etcdClient),
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(apiPort), "--cert-dir", filepath.Join(base, "apiserver"),
		"--token-auth-file", tokens, "--authorization-mode", "AlwaysAllow",
		"--service-cluster-ip-range", "10.0.0.0/24", "--endpoint-reconciler-type", "none", // loopback: no kubernetes Service endpoints
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
	}
}

// startControlPlane starts etcd and kube-apiserver and waits until the API
// server is ready (with our own token: another stack's API server on a
// reused port would not accept it).
func (s *stack) startControlPlane(ctx context.Context, t *testing.T, apiserverBin, etcdBin, token string) controlPlane {
	logs := filepath.Join(s.base, "logs")
	ports := freePorts(t, 3)
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	s.saKey = writeKey(t, filepath.Join(s.base, "sa.key"))
	tokens := filepath.Join(s.base, "tokens.csv")
	writeFile(t, tokens, token+`,admin,admin,"system:masters"`+"\n")
	flags := apiserverFlags(s.base, etcdClient, apiPort, tokens, s.saKey)
	cp := controlPlane{url: fmt.Sprintf("https://127.0.0.1:%d", apiPort)}
	if helper := apiserverHelper(t); helper != "" {
		// The helper starts etcd itself and kube-apiserver beside it.
		args := append([]string{"--etcd", etcdBin, "--etcd-data-dir", filepath.Join(s.base, "etcd"),
			"--etcd-log", filepath.Join(logs, "etcd.log"),
			"--etcd-client-port", fmt.Sprint(etcdClient), "--etcd-peer-port", fmt.Sprint(etcdPeer), "--"}, flags...)
		cp.apiserver = startProcess(t, logs, "kube-apiserver", s.base, helper, args...)
	} else {
		s.startEtcd(ctx, t, etcdBin, token, etcdClient, etcdPeer)
		cp.apiserver = startProcess(t, logs, "kube-apiserver", s.base, apiserverBin, flags...)
	}
	d, err := waitFor(ctx, cp.apiserver, "kube-apiserver /readyz", 120*time.Second, httpOK(cp.url+"/readyz", token, "ok"))
	if err != nil {
		t.Fatal(err)
	}
	s.timed("kube-apiserver", d)
	return cp
}

// startEtcd starts etcd as a process of the stack (a release without the
// helper) and waits for its /health.
func (s *stack) startEtcd(ctx context.Context, t *testing.T, etcdBin, token string, client, peer int) {
	name := "realkubelet-" + token[:8]
	clientURL, peerURL := fmt.Sprintf("http://127.0.0.1:%d", client), fmt.Sprintf("http://127.0.0.1:%d", peer)
	etcd := startProcess(t, filepath.Join(s.base, "logs"), "etcd", s.base, etcdBin,
		"--name", name, "--data-dir", filepath.Join(s.base, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", name+"="+peerURL)
	d, err := waitFor(ctx, etcd, "etcd /health", 60*time.Second, httpOK(clientURL+"/health", "", `"health":"true"`))
	if err != nil {
		t.Fatal(err)
	}
	s.timed("etcd", d)
}
