package livecluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
)

// Config is a cluster to read from: its client and the context's
// namespace.
type Config struct {
	Host      string
	Namespace string
	// Deadline bounds a whole Read (every GET of it); DefaultDeadline
	// when zero.
	Deadline time.Duration
	client   *http.Client
}

// DefaultDeadline is how long a Read may take in all: a pod's objects
// are read in seconds even with thousands of volumes.
const DefaultDeadline = 2 * time.Minute

// DefaultKubeconfig is the kubeconfig kubectl reads without --kubeconfig:
// the first file of $KUBECONFIG, else ~/.kube/config.
func DefaultKubeconfig() string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if len(rules.Precedence) > 0 {
		return rules.Precedence[0]
	}
	return clientcmd.RecommendedHomeFile
}

// LoadKubeconfig reads a kubeconfig with client-go's loader, as kubectl
// does (relative paths from the file's directory; client certificates,
// tokens and token files, exec credential plugins such as `aws eks
// get-token`, run on the first request), and makes the client of its
// current context. Only client-go's REST transport is linked, not its
// typed clientset, so the CLI stays about the size it was.
func LoadKubeconfig(_ context.Context, path string) (*Config, error) {
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{})
	if err := checkCurrent(loader); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rc, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rc.UserAgent = "csi-kubelet-sim"
	rc.Timeout = 30 * time.Second
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// A redirect is never followed: Go drops the Authorization header on
	// a redirect to another host, but client-go's bearer round-tripper
	// adds the kubeconfig's token back to every request, the redirected
	// one too. The 3xx is the cluster's answer (get reports it).
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Config{Host: strings.TrimSuffix(rc.Host, "/"), Namespace: ns, client: hc}, nil
}

// checkCurrent names what client-go's loader would report less plainly:
// no current context, one that does not exist, and an auth-provider
// (kubectl's own gcp/azure providers are gone; exec plugins replace them).
func checkCurrent(loader clientcmd.ClientConfig) error {
	raw, err := loader.RawConfig()
	if err != nil {
		return err
	}
	if raw.CurrentContext == "" {
		return errors.New("no current-context")
	}
	kctx, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return fmt.Errorf("current-context %q: no such context", raw.CurrentContext)
	}
	if cl, ok := raw.Clusters[kctx.Cluster]; !ok || cl.Server == "" {
		return fmt.Errorf("context %q: no cluster %q with a server", raw.CurrentContext, kctx.Cluster)
	}
	if u, ok := raw.AuthInfos[kctx.AuthInfo]; ok && u.AuthProvider != nil {
		return errors.New("user: auth-provider is not supported (kubectl's own are deprecated): use an exec credential plugin")
	}
	return nil
}

// RedirectError: the API server answered a GET with a redirect, which is
// not followed (the kubeconfig's credentials would go with it).
type RedirectError struct {
	Host, Path string
	Status     string // "302 Found"
	Location   string
}

func (e *RedirectError) Error() string {
	to := e.Location
	if to == "" {
		to = "(no Location)"
	}
	return fmt.Sprintf("the API server at %s answered %s to %s for %s: not followed (a redirect is never followed, so that the kubeconfig's credentials go nowhere else)", e.Host, e.Status, to, e.Path)
}

// AnswerError: the API server answered, but its answer is not a valid
// object (truncated, not JSON, cut by a proxy).
type AnswerError struct {
	Host, Path string
	Size       int
	Err        error
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("the API server at %s answered %s with %d bytes, but the server's answer was not a valid object: %v", e.Host, e.Path, e.Size, e.Err)
}

func (e *AnswerError) Unwrap() error { return e.Err }

// get reads one object by its path into out.
func (c *Config) get(ctx context.Context, path string, out any) error {
	data, err := c.fetch(ctx, path)
	if err != nil {
		return err
	}
	return c.decode(path, data, out)
}

// decode reads an answer into out.
func (c *Config) decode(path string, data []byte, out any) error {
	if err := json.Unmarshal(data, out); err != nil {
		return &AnswerError{Host: c.Host, Path: path, Size: len(data), Err: err}
	}
	return nil
}

// fetch GETs one object's JSON: an API refusal is a StatusError, a
// redirect a RedirectError.
func (c *Config) fetch(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Host+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		return nil, &RedirectError{Host: c.Host, Path: path, Status: resp.Status, Location: resp.Header.Get("Location")}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
			return nil, &AnswerError{Host: c.Host, Path: path, Size: len(data), Err: err}
		}
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &cluster.StatusError{Code: resp.StatusCode}
		if json.Unmarshal(data, &se.Status) != nil || se.Status.Message == "" {
			se.Status.Message = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(data)))
		}
		return nil, se
	}
	return data, nil
}
