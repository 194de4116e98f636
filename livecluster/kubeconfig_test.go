package livecluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// apiServer answers every GET with an empty object and records the
// Authorization header it was sent.
type apiServer struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

func writeKC(t *testing.T, dir, user string) string {
	return writeKCFor(t, dir, "https://cluster.example:6443/", user)
}

func writeKCFor(t *testing.T, dir, server, user string) string {
	t.Helper()
	kc := `apiVersion: v1
kind: Config
current-context: work
clusters:
- name: c
  cluster: {server: "` + server + `", insecure-skip-tls-verify: true}
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
	srv := newAPIServer(t)
	cfg, err := LoadKubeconfig(context.Background(), writeKCFor(t, dir, srv.URL+"/", "    tokenFile: token\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != srv.URL || cfg.Namespace != "shop" {
		t.Errorf("host %q (want %q) namespace %q", cfg.Host, srv.URL, cfg.Namespace)
	}
	if err := cfg.get(context.Background(), "/api/v1/namespaces/shop/pods/web", &struct{}{}); err != nil {
		t.Fatal(err)
	}
	if got := srv.sent(); len(got) != 1 || got[0] != "Bearer tok-123" {
		t.Errorf("Authorization sent %q, want [Bearer tok-123]", got)
	}
}

// An exec credential plugin (as EKS and GKE kubeconfigs have) is run with
// KUBERNETES_EXEC_INFO on the first request, and its token used.
func TestKubeconfigExecPlugin(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plugin.sh")
	script := "#!/bin/sh\ncase \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; *) exit 3;; esac\n" +
		"echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"'\"$1-$TEAM\"'\"}}'\n"
	if err := os.WriteFile(plugin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	user := "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: " + plugin + "\n      args: [eks]\n      env: [{name: TEAM, value: storage}]\n"
	srv := newAPIServer(t)
	cfg, err := LoadKubeconfig(context.Background(), writeKCFor(t, dir, srv.URL, user))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.get(context.Background(), "/api/v1/nodes/n1", &struct{}{}); err != nil {
		t.Fatal(err)
	}
	if got := srv.sent(); len(got) != 1 || got[0] != "Bearer eks-storage" {
		t.Errorf("Authorization sent %q, want [Bearer eks-storage]", got)
	}
	// A plugin that fails: the request fails, naming the plugin, and
	// nothing reaches the API server. (Another path: client-go keeps a
	// plugin's credential for the process, by its configuration.)
	failing := filepath.Join(dir, "failing.sh")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\necho 'no credentials' >&2\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	plugin = failing
	cfg, err = LoadKubeconfig(context.Background(), writeKCFor(t, dir, srv.URL, strings.Replace(user, "plugin.sh", "failing.sh", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.get(context.Background(), "/api/v1/nodes/n1", &struct{}{}); err == nil || !strings.Contains(err.Error(), plugin) {
		t.Errorf("err = %v, want one naming the plugin", err)
	}
	if got := srv.sent(); len(got) != 1 {
		t.Errorf("requests after the failed plugin: %q", got)
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
