package livecluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
)

// A kubeconfig read as kubectl reads it, as far as a read-only client
// needs: the current context's cluster (server, CA, or
// insecure-skip-tls-verify) and user (client certificate, bearer token or
// token file, or an exec credential plugin such as `aws eks get-token` or
// `gke-gcloud-auth-plugin`), and the context's namespace. client-go's
// loader would do, but it would link client-go into csi-kubelet-sim and
// double its size for every run.

type kubeconfig struct {
	CurrentContext string `json:"current-context"`
	Clusters       []struct {
		Name    string      `json:"name"`
		Cluster clusterInfo `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string   `json:"name"`
		User userInfo `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster   string `json:"cluster"`
			User      string `json:"user"`
			Namespace string `json:"namespace"`
		} `json:"context"`
	} `json:"contexts"`
}

type userInfo struct {
	ClientCertificate     string          `json:"client-certificate"`
	ClientCertificateData string          `json:"client-certificate-data"`
	ClientKey             string          `json:"client-key"`
	ClientKeyData         string          `json:"client-key-data"`
	Token                 string          `json:"token"`
	TokenFile             string          `json:"tokenFile"`
	Exec                  *execConfig     `json:"exec"`
	AuthProvider          json.RawMessage `json:"auth-provider"`
}

type execConfig struct {
	Command    string   `json:"command"`
	Args       []string `json:"args"`
	Env        []struct{ Name, Value string }
	APIVersion string `json:"apiVersion"`
}

// Config is a cluster to read from: its client and the context's
// namespace.
type Config struct {
	Host      string
	Namespace string
	client    *http.Client
	token     string
}

// DefaultKubeconfig is the kubeconfig kubectl reads without --kubeconfig:
// the first file of $KUBECONFIG, else ~/.kube/config.
func DefaultKubeconfig() string {
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return filepath.SplitList(env)[0]
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".kube", "config")
}

// LoadKubeconfig reads a kubeconfig file and makes the client of its
// current context. Paths in it are relative to its directory, as kubectl
// takes them.
func LoadKubeconfig(ctx context.Context, path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	cl, user, ns, err := kc.current()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cl.InsecureSkipTLSVerify, ServerName: cl.TLSServerName} //nolint:gosec // as the kubeconfig says
	if ca, err := pemOf(cl.CertificateAuthorityData, rel(cl.CertificateAuthority)); err != nil {
		return nil, fmt.Errorf("%s: certificate-authority: %w", path, err)
	} else if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%s: certificate-authority: no certificate", path)
		}
		tlsConf.RootCAs = pool
	}
	cfg := &Config{Host: strings.TrimSuffix(cl.Server, "/"), Namespace: ns}
	if err := cfg.credentials(ctx, user, rel, tlsConf); err != nil {
		return nil, fmt.Errorf("%s: user: %w", path, err)
	}
	cfg.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf, Proxy: http.ProxyFromEnvironment}}
	return cfg, nil
}

type clusterInfo struct {
	Server                   string `json:"server"`
	CertificateAuthority     string `json:"certificate-authority"`
	CertificateAuthorityData string `json:"certificate-authority-data"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
	TLSServerName            string `json:"tls-server-name"`
}

// current finds the current context's cluster, user and namespace.
func (kc *kubeconfig) current() (clusterInfo, userInfo, string, error) {
	for _, c := range kc.Contexts {
		if c.Name != kc.CurrentContext {
			continue
		}
		var cl *clusterInfo
		for i := range kc.Clusters {
			if kc.Clusters[i].Name == c.Context.Cluster {
				cl = &kc.Clusters[i].Cluster
			}
		}
		if cl == nil || cl.Server == "" {
			return clusterInfo{}, userInfo{}, "", fmt.Errorf("context %q: no cluster %q with a server", c.Name, c.Context.Cluster)
		}
		var u userInfo
		for _, x := range kc.Users {
			if x.Name == c.Context.User {
				u = x.User
			}
		}
		return *cl, u, c.Context.Namespace, nil
	}
	if kc.CurrentContext == "" {
		return clusterInfo{}, userInfo{}, "", errors.New("no current-context")
	}
	return clusterInfo{}, userInfo{}, "", fmt.Errorf("current-context %q: no such context", kc.CurrentContext)
}

// credentials sets the client certificate or the bearer token.
func (c *Config) credentials(ctx context.Context, u userInfo, rel func(string) string, tlsConf *tls.Config) error {
	if len(u.AuthProvider) > 0 && string(u.AuthProvider) != "null" {
		return errors.New("auth-provider is not supported (kubectl's own are deprecated): use an exec credential plugin")
	}
	if u.Exec != nil {
		return c.execCredential(ctx, u.Exec, tlsConf)
	}
	cert, err := pemOf(u.ClientCertificateData, rel(u.ClientCertificate))
	if err != nil {
		return err
	}
	key, err := pemOf(u.ClientKeyData, rel(u.ClientKey))
	if err != nil {
		return err
	}
	if cert != nil || key != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return fmt.Errorf("client certificate: %w", err)
		}
		tlsConf.Certificates = []tls.Certificate{pair}
	}
	c.token = u.Token
	if u.TokenFile != "" {
		b, err := os.ReadFile(rel(u.TokenFile))
		if err != nil {
			return err
		}
		c.token = strings.TrimSpace(string(b))
	}
	return nil
}

// execCredential runs an exec plugin once (the replay is short) and takes
// its token or client certificate (client.authentication.k8s.io
// ExecCredential).
func (c *Config) execCredential(ctx context.Context, e *execConfig, tlsConf *tls.Config) error {
	cmd := exec.CommandContext(ctx, e.Command, e.Args...)
	cmd.Env = os.Environ()
	for _, v := range e.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	apiVersion := e.APIVersion
	if apiVersion == "" {
		apiVersion = "client.authentication.k8s.io/v1"
	}
	cmd.Env = append(cmd.Env, fmt.Sprintf(`KUBERNETES_EXEC_INFO={"apiVersion":%q,"kind":"ExecCredential","spec":{"interactive":false}}`, apiVersion))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("exec plugin %s: %w: %s", e.Command, err, strings.TrimSpace(stderr.String()))
	}
	var cred struct {
		Status struct {
			Token                 string `json:"token"`
			ClientCertificateData string `json:"clientCertificateData"`
			ClientKeyData         string `json:"clientKeyData"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &cred); err != nil {
		return fmt.Errorf("exec plugin %s: not an ExecCredential: %w", e.Command, err)
	}
	c.token = cred.Status.Token
	if cred.Status.ClientCertificateData != "" {
		pair, err := tls.X509KeyPair([]byte(cred.Status.ClientCertificateData), []byte(cred.Status.ClientKeyData))
		if err != nil {
			return fmt.Errorf("exec plugin %s: client certificate: %w", e.Command, err)
		}
		tlsConf.Certificates = []tls.Certificate{pair}
	}
	return nil
}

// pemOf is inline base64 data, else the file's content, else nil.
func pemOf(data, file string) ([]byte, error) {
	if data != "" {
		return base64.StdEncoding.DecodeString(data)
	}
	if file != "" {
		return os.ReadFile(file)
	}
	return nil, nil
}

// get reads one object by its path into out.
func (c *Config) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Host+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "csi-kubelet-sim")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &cluster.StatusError{Code: resp.StatusCode}
		if json.Unmarshal(data, &se.Status) != nil || se.Status.Message == "" {
			se.Status.Message = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(data)))
		}
		return se
	}
	return json.Unmarshal(data, out)
}
