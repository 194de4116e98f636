package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"
)

// kubeconfig is the part of a kubeconfig file read here: the current
// context's server, CA and credential (a token or a client certificate;
// exec plugins and auth providers are not run).
type kubeconfig struct {
	CurrentContext string `json:"current-context"`
	Contexts       []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	Clusters []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server   string `json:"server"`
			CA       string `json:"certificate-authority"`
			CAData   []byte `json:"certificate-authority-data"`
			Insecure bool   `json:"insecure-skip-tls-verify"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			Token     string `json:"token"`
			TokenFile string `json:"tokenFile"`
			Cert      string `json:"client-certificate"`
			CertData  []byte `json:"client-certificate-data"`
			Key       string `json:"client-key"`
			KeyData   []byte `json:"client-key-data"`
			Exec      any    `json:"exec"`
		} `json:"user"`
	} `json:"users"`
}

// LiveCluster is a cluster reached with a kubeconfig, read only.
type LiveCluster struct {
	Server string
	c      *client
}

// OpenKubeconfig reads a kubeconfig's current context.
func OpenKubeconfig(path string) (*LiveCluster, error) {
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
		if p != "" && !filepath.IsAbs(p) {
			return filepath.Join(dir, p)
		}
		return p
	}
	var clusterName, userName string
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext {
			clusterName, userName = c.Context.Cluster, c.Context.User
		}
	}
	if clusterName == "" {
		return nil, fmt.Errorf("%s: no current-context %q", path, kc.CurrentContext)
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	lc := &LiveCluster{}
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		lc.Server = strings.TrimSuffix(c.Cluster.Server, "/")
		tlsCfg.InsecureSkipVerify = c.Cluster.Insecure //nolint:gosec // the kubeconfig asks for it
		ca := c.Cluster.CAData
		if len(ca) == 0 && c.Cluster.CA != "" {
			if ca, err = os.ReadFile(rel(c.Cluster.CA)); err != nil {
				return nil, fmt.Errorf("%s: certificate-authority: %w", path, err)
			}
		}
		if len(ca) > 0 {
			tlsCfg.RootCAs = x509.NewCertPool()
			if !tlsCfg.RootCAs.AppendCertsFromPEM(ca) {
				return nil, fmt.Errorf("%s: certificate-authority: no certificate", path)
			}
		}
	}
	if lc.Server == "" {
		return nil, fmt.Errorf("%s: no server for cluster %q", path, clusterName)
	}
	token := ""
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		if u.User.Exec != nil {
			return nil, fmt.Errorf("%s: user %q uses an exec plugin, which is not run: give a kubeconfig with a token or a client certificate", path, userName)
		}
		token = u.User.Token
		if token == "" && u.User.TokenFile != "" {
			b, err := os.ReadFile(rel(u.User.TokenFile))
			if err != nil {
				return nil, fmt.Errorf("%s: tokenFile: %w", path, err)
			}
			token = strings.TrimSpace(string(b))
		}
		certPEM, keyPEM := u.User.CertData, u.User.KeyData
		if len(certPEM) == 0 && u.User.Cert != "" {
			if certPEM, err = os.ReadFile(rel(u.User.Cert)); err != nil {
				return nil, fmt.Errorf("%s: client-certificate: %w", path, err)
			}
		}
		if len(keyPEM) == 0 && u.User.Key != "" {
			if keyPEM, err = os.ReadFile(rel(u.User.Key)); err != nil {
				return nil, fmt.Errorf("%s: client-key: %w", path, err)
			}
		}
		if len(certPEM) > 0 {
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return nil, fmt.Errorf("%s: client certificate: %w", path, err)
			}
			tlsCfg.Certificates = []tls.Certificate{pair}
		}
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	lc.c = &client{base: lc.Server, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}, token: token}
	return lc, nil
}

// PodInput is a pod and what its volumes reference, as manifests.
type PodInput struct {
	YAML   []byte   // the objects, one document each
	Read   []string // "Kind ns/name" of each object read
	Absent []string // referenced objects the cluster does not have
}

// ReadPod reads the pod and everything its volumes reference: its
// ServiceAccount, the CSIDrivers, claims, volumes, StorageClasses, the
// Secrets they name and the volumes' VolumeAttachments to the pod's node.
// Only GETs and LISTs are sent.
func (lc *LiveCluster) ReadPod(ctx context.Context, namespace, name string) (*PodInput, error) {
	r := &podReader{lc: lc, in: &PodInput{}, seen: map[string]bool{}}
	var pod corev1.Pod
	if err := r.get(ctx, "Pod", namespace, name, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/pods/"+url.PathEscape(name), &pod); err != nil {
		return nil, err
	}
	if pod.Name == "" {
		return nil, fmt.Errorf("the cluster at %s has no Pod %s/%s", lc.Server, namespace, name)
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	r.get(ctx, "ServiceAccount", namespace, sa, "/api/v1/namespaces/"+url.PathEscape(namespace)+"/serviceaccounts/"+url.PathEscape(sa), &corev1.ServiceAccount{})
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.CSI != nil:
			r.csiDriver(ctx, v.CSI.Driver)
			if ref := v.CSI.NodePublishSecretRef; ref != nil {
				r.secret(ctx, namespace, ref.Name)
			}
		case v.PersistentVolumeClaim != nil:
			r.claim(ctx, &pod, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			r.claim(ctx, &pod, pod.Name+"-"+v.Name)
		}
	}
	return r.in, r.err
}

type podReader struct {
	lc   *LiveCluster
	in   *PodInput
	seen map[string]bool
	err  error // the first error that is not a 404
}

// get reads one object into out and adds it to the input; a 404 is noted
// as absent (the kubelet will say what it misses), nothing else is
// forgiven.
func (r *podReader) get(ctx context.Context, kind, ns, name, path string, out any) error {
	key := kind + " " + strings.TrimPrefix(ns+"/"+name, "/")
	if r.seen[key] {
		return nil
	}
	r.seen[key] = true
	var raw json.RawMessage
	if err := r.lc.c.do(ctx, http.MethodGet, path, nil, &raw); err != nil {
		if isNotFound(err) {
			r.in.Absent = append(r.in.Absent, key)
			return nil
		}
		err = fmt.Errorf("%s at %s: %w", key, r.lc.Server, err)
		if r.err == nil {
			r.err = err
		}
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return err
	}
	doc, err := cleanDocument(raw)
	if err != nil {
		return err
	}
	r.in.YAML = append(r.in.YAML, []byte("---\n")...)
	r.in.YAML = append(r.in.YAML, doc...)
	r.in.Read = append(r.in.Read, key)
	return nil
}

// cleanDocument drops what the API server adds that a manifest has no
// place for (managedFields) and returns the object as YAML.
func cleanDocument(raw []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "managedFields")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(b)
}

func (r *podReader) csiDriver(ctx context.Context, name string) {
	_ = r.get(ctx, "CSIDriver", "", name, "/apis/storage.k8s.io/v1/csidrivers/"+url.PathEscape(name), &storagev1.CSIDriver{})
}

func (r *podReader) secret(ctx context.Context, ns, name string) {
	_ = r.get(ctx, "Secret", ns, name, "/api/v1/namespaces/"+url.PathEscape(ns)+"/secrets/"+url.PathEscape(name), &corev1.Secret{})
}

func (r *podReader) claim(ctx context.Context, pod *corev1.Pod, name string) {
	var pvc corev1.PersistentVolumeClaim
	ns := pod.Namespace
	if r.get(ctx, "PersistentVolumeClaim", ns, name, "/api/v1/namespaces/"+url.PathEscape(ns)+"/persistentvolumeclaims/"+url.PathEscape(name), &pvc) != nil || pvc.Name == "" {
		return
	}
	if sc := pvc.Spec.StorageClassName; sc != nil && *sc != "" {
		_ = r.get(ctx, "StorageClass", "", *sc, "/apis/storage.k8s.io/v1/storageclasses/"+url.PathEscape(*sc), &storagev1.StorageClass{})
	}
	if pvc.Spec.VolumeName == "" {
		return
	}
	var pv corev1.PersistentVolume
	if r.get(ctx, "PersistentVolume", "", pvc.Spec.VolumeName, "/api/v1/persistentvolumes/"+url.PathEscape(pvc.Spec.VolumeName), &pv) != nil || pv.Spec.CSI == nil {
		return
	}
	r.csiDriver(ctx, pv.Spec.CSI.Driver)
	for _, ref := range []*corev1.SecretReference{pv.Spec.CSI.NodeStageSecretRef, pv.Spec.CSI.NodePublishSecretRef, pv.Spec.CSI.NodeExpandSecretRef} {
		if ref != nil {
			r.secret(ctx, ref.Namespace, ref.Name)
		}
	}
	r.attachments(ctx, pv.Name, pod.Spec.NodeName)
}

// attachments reads the VolumeAttachments of the volume to the node.
func (r *podReader) attachments(ctx context.Context, pv, nodeName string) {
	var list storagev1.VolumeAttachmentList
	if err := r.lc.c.do(ctx, http.MethodGet, "/apis/storage.k8s.io/v1/volumeattachments", nil, &list); err != nil {
		if r.err == nil && !isNotFound(err) {
			r.err = fmt.Errorf("VolumeAttachments at %s: %w", r.lc.Server, err)
		}
		return
	}
	for _, va := range list.Items {
		if va.Spec.Source.PersistentVolumeName == nil || *va.Spec.Source.PersistentVolumeName != pv || va.Spec.NodeName != nodeName {
			continue
		}
		_ = r.get(ctx, "VolumeAttachment", "", va.Name, "/apis/storage.k8s.io/v1/volumeattachments/"+url.PathEscape(va.Name), &storagev1.VolumeAttachment{})
	}
}
