package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// KubeletTokens answers the kubelet's TokenRequests with the API server's
// TokenRequest API, with the kubelet's own credential (the Node
// authorizer and NodeRestriction judge them as a real kubelet's).
func (cp *ControlPlane) KubeletTokens() TokenAPI { return TokenAPI{c: cp.kubelet} }

// TokenAPI is the TokenRequest API for one client.
type TokenAPI struct{ c *client }

// Token creates a token for the service account.
func (k TokenAPI) Token(ctx context.Context, namespace, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	out := &authenticationv1.TokenRequest{}
	send := req.DeepCopy()
	send.APIVersion, send.Kind = "authentication.k8s.io/v1", "TokenRequest"
	path := "/api/v1/namespaces/" + url.PathEscape(namespace) + "/serviceaccounts/" + url.PathEscape(sa) + "/token"
	if err := k.c.do(ctx, http.MethodPost, path, send, out); err != nil {
		return nil, err
	}
	return out, nil
}

// RegisterNode creates the kubelet's Node, as the kubelet does on start.
func (cp *ControlPlane) RegisterNode(ctx context.Context, name string) (*corev1.Node, error) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.APIVersion, n.Kind = "v1", "Node"
	created := &corev1.Node{}
	err := cp.kubelet.do(ctx, http.MethodPost, "/api/v1/nodes", n, created)
	if isAlreadyExists(err) {
		err = cp.kubelet.do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(name), nil, created)
	}
	if err != nil {
		return nil, fmt.Errorf("register Node %s: %w", name, err)
	}
	return created, nil
}

// DriverServiceAccount is the service account the input's RBAC gives
// rights: the one ServiceAccount subject of its RoleBindings and
// ClusterRoleBindings. None (no RBAC) or several: nil, and the names.
func DriverServiceAccount(docs []Document) (*types.NamespacedName, []string) {
	seen := map[types.NamespacedName]bool{}
	for _, d := range docs {
		k := d.Obj.Kind()
		if d.Obj.Group() != "rbac.authorization.k8s.io" || (k != "RoleBinding" && k != "ClusterRoleBinding") {
			continue
		}
		subjects, _ := d.Obj["subjects"].([]any)
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			if m["kind"] != "ServiceAccount" {
				continue
			}
			ns, _ := m["namespace"].(string)
			if ns == "" {
				ns = nsOrDefault(d.Obj)
			}
			name, _ := m["name"].(string)
			seen[types.NamespacedName{Namespace: ns, Name: name}] = true
		}
	}
	var names []string
	var one types.NamespacedName
	for k := range seen {
		names = append(names, k.String())
		one = k
	}
	sort.Strings(names)
	if len(seen) != 1 {
		return nil, names
	}
	return &one, names
}

// WriteDriverKubeconfig writes the driver's kubeconfig to path: a token of
// sa (made with the TokenRequest API, valid a day) when sa is set, else
// the admin's certificate (cluster-admin); why says why that identity. The file holds everything (CA
// and credential inline), so it works wherever the driver runs on this
// machine.
func (cp *ControlPlane) WriteDriverKubeconfig(ctx context.Context, path string, sa *types.NamespacedName, why string) (DriverIdentity, error) {
	var id DriverIdentity
	ca, err := os.ReadFile(cp.CAFile)
	if err != nil {
		return id, err
	}
	var user string
	if sa != nil {
		day := int64(86400)
		tr, err := TokenAPI{c: cp.admin}.Token(ctx, sa.Namespace, sa.Name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day}})
		if err != nil {
			return id, fmt.Errorf("a token for the driver's ServiceAccount %s: %w", sa, err)
		}
		user = "    token: " + tr.Status.Token + "\n"
		id = DriverIdentity{User: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name, Why: why}
	} else {
		cert, err := os.ReadFile(cp.driverCert[0])
		if err != nil {
			return id, err
		}
		key, err := os.ReadFile(cp.driverCert[1])
		if err != nil {
			return id, err
		}
		user = "    client-certificate-data: " + b64(cert) + "\n    client-key-data: " + b64(key) + "\n"
		id = DriverIdentity{User: DriverAdmin, Admin: true, Why: why}
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: csi-kubelet-sim
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: driver
  user:
%scontexts:
- name: csi-kubelet-sim
  context: {cluster: csi-kubelet-sim, user: driver}
current-context: csi-kubelet-sim
`, cp.URL, b64(ca), user)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return id, fmt.Errorf("driver kubeconfig: %w", err)
	}
	id.Kubeconfig = path
	return id, nil
}

// DriverIdentity is who the driver is on the API server.
type DriverIdentity struct {
	User       string // the audit log's user name
	Admin      bool   // cluster-admin
	Why        string
	Kubeconfig string
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
