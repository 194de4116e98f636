package livecluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeKC(t *testing.T, dir, user string) string {
	t.Helper()
	kc := `apiVersion: v1
kind: Config
current-context: work
clusters:
- name: c
  cluster: {server: "https://cluster.example:6443/", insecure-skip-tls-verify: true}
contexts:
- name: other
  context: {cluster: c, user: u, namespace: elsewhere}
- name: work
  context: {cluster: c, user: u, namespace: shop}
users:
- name: u
  user:
` + user
	p := filepath.Join(dir, "config")
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The current context's cluster, namespace and user: a token file
// relative to the kubeconfig's directory, as kubectl reads it.
func TestKubeconfigTokenFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadKubeconfig(context.Background(), writeKC(t, dir, "    tokenFile: token\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://cluster.example:6443" || cfg.Namespace != "shop" || cfg.token != "tok-123" {
		t.Errorf("host %q namespace %q token %q", cfg.Host, cfg.Namespace, cfg.token)
	}
}

// An exec credential plugin (as EKS and GKE kubeconfigs have) is run once
// with KUBERNETES_EXEC_INFO, and its token used.
func TestKubeconfigExecPlugin(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plugin.sh")
	script := "#!/bin/sh\ncase \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; *) exit 3;; esac\n" +
		"echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"'\"$1-$TEAM\"'\"}}'\n"
	if err := os.WriteFile(plugin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	user := "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: " + plugin + "\n      args: [eks]\n      env: [{name: TEAM, value: storage}]\n"
	cfg, err := LoadKubeconfig(context.Background(), writeKC(t, dir, user))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.token != "eks-storage" {
		t.Errorf("token %q, want eks-storage", cfg.token)
	}
	// A plugin that fails: its error, named.
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\necho 'no credentials' >&2\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKubeconfig(context.Background(), writeKC(t, dir, user)); err == nil || !strings.Contains(err.Error(), "no credentials") {
		t.Errorf("err = %v, want the plugin's message", err)
	}
}

// A kubeconfig without the current context, or with an auth-provider:
// a one-line error naming the file and what is wrong.
func TestKubeconfigRefused(t *testing.T) {
	dir := t.TempDir()
	p := writeKC(t, dir, "    auth-provider: {name: gcp}\n")
	if _, err := LoadKubeconfig(context.Background(), p); err == nil || !strings.Contains(err.Error(), "auth-provider is not supported") || !strings.Contains(err.Error(), p) {
		t.Errorf("err = %v", err)
	}
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "current-context: work", "current-context: gone", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKubeconfig(context.Background(), p); err == nil || !strings.Contains(err.Error(), `current-context "gone": no such context`) {
		t.Errorf("err = %v", err)
	}
}
