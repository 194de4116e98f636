package webhookdiff

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	agnhostwebhook "k8s.io/kubernetes/test/images/agnhost/webhook"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/admission"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/fixtures/webhook"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// agnhost is the Kubernetes e2e webhook server, started once in this
// process (it serves on http.DefaultServeMux, so only once).
type agnhost struct {
	url string
	ca  []byte
}

var started *agnhost

func startAgnhost(t *testing.T) *agnhost {
	t.Helper()
	if started != nil {
		return started
	}
	ca, err := webhook.NewCA("localhost")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "agnhost-")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	keyDER, err := x509.MarshalECPrivateKey(ca.Cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certFile, "CERTIFICATE", ca.Cert.Certificate[0])
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	port := freePort(t)
	cmd := agnhostwebhook.CmdWebhook
	for k, v := range map[string]string{"tls-cert-file": certFile, "tls-private-key-file": keyFile, "port": fmt.Sprint(port), "sidecar-image": "registry.k8s.io/pause:3.10"} {
		if err := cmd.Flags().Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	go cmd.Run(cmd, nil)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	for i := 0; ; i++ {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
		if err == nil {
			c.Close()
			break
		}
		if i > 100 {
			t.Fatalf("agnhost webhook did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	started = &agnhost{url: "https://" + addr, ca: ca.PEM}
	return started
}

func writePEM(t *testing.T, name, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (a *agnhost) hook(name, path string) admissionregistrationv1.MutatingWebhook {
	h := validHook()
	h.Name = name
	h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr(a.url + path), CABundle: a.ca}
	manifests.SetDefaultsMutatingWebhook(&h)
	return h
}

func cfg(name string, hooks ...admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
}

func admit(t *testing.T, p *corev1.Pod, configs ...*admissionregistrationv1.MutatingWebhookConfiguration) (*corev1.Pod, *admission.Report, error) {
	t.Helper()
	a, err := admission.New(admission.Options{}, configs)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	out, r, err := a.AdmitCreate(context.Background(), p)
	if out == nil {
		return nil, r, err
	}
	return out.(*corev1.Pod), r, err
}

func TestAgnhostMutates(t *testing.T) {
	ag := startAgnhost(t)
	cases := []struct {
		name    string
		path    string
		pod     *corev1.Pod
		review  []string
		changes string
	}{
		{"add-label, no labels", "/add-label", pod("p", nil), []string{"v1"}, "added label added-label=yes"},
		{"add-label, other labels", "/add-label", pod("p", map[string]string{"app": "x"}), []string{"v1"}, "added label added-label=yes"},
		{"add-label over v1beta1", "/add-label", pod("p", nil), []string{"v1beta1"}, "added label added-label=yes"},
		{"init container", "/mutating-pods", pod("webhook-to-be-mutated", nil), []string{"v1"}, "added init container webhook-added-init-container (image webhook-added-image)"},
		{"other pod untouched", "/mutating-pods", pod("other", nil), []string{"v1"}, ""},
		{"sidecar", "/mutating-pods-sidecar", pod("p", nil), []string{"v1"}, "added container webhook-added-sidecar (image registry.k8s.io/pause:3.10)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := ag.hook("agnhost.example.com", tc.path)
			h.AdmissionReviewVersions = tc.review
			_, r, err := admit(t, tc.pod, cfg("agnhost", h))
			if err != nil {
				t.Fatal(err)
			}
			w := r.Webhooks[0]
			if !w.Called || !w.Allowed || strings.Join(w.Changes, "; ") != tc.changes {
				t.Errorf("called %v allowed %v changes %q, want %q (error %s)", w.Called, w.Allowed, w.Changes, tc.changes, w.Error)
			}
		})
	}
}

func TestAgnhostRefuses(t *testing.T) {
	ag := startAgnhost(t)
	cases := []struct {
		name    string
		path    string
		pod     *corev1.Pod
		timeout int32
		kind    admission.ErrorKind
		msg     string
	}{
		{"always-deny", "/always-deny", pod("p", nil), 10, admission.Denied, "this webhook denies all requests"},
		{"unwanted label", "/pods", pod("p", map[string]string{"webhook-e2e-test": "webhook-disallow"}), 10, admission.Denied, "the pod contains unwanted label"},
		{"slow webhook", "/always-allow-delay-5s", pod("p", nil), 1, admission.CallFailed, "deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := ag.hook("agnhost.example.com", tc.path)
			h.TimeoutSeconds = &tc.timeout
			_, _, err := admit(t, tc.pod, cfg("agnhost", h))
			var e *admission.Error
			if !errors.As(err, &e) || e.Kind != tc.kind || e.Webhook != "agnhost.example.com" || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("error %v, want %s containing %q", err, tc.kind, tc.msg)
			}
			if tc.kind == admission.Denied {
				return
			}
			h.FailurePolicy = ptr(admissionregistrationv1.Ignore)
			_, r, err := admit(t, tc.pod, cfg("agnhost", h))
			if err != nil || !r.Webhooks[0].FailedOpen {
				t.Errorf("failurePolicy Ignore: %v %+v", err, r.Webhooks[0])
			}
		})
	}
}

// TestAgnhostReinvocation: the init-container webhook (IfNeeded) runs
// again after the label webhook changed the pod, and leaves it as is.
func TestAgnhostReinvocation(t *testing.T) {
	ag := startAgnhost(t)
	first := ag.hook("init.example.com", "/mutating-pods")
	first.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
	second := ag.hook("label.example.com", "/add-label")
	p, r, err := admit(t, pod("webhook-to-be-mutated", nil), cfg("b", second), cfg("a", first))
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, w := range r.Webhooks {
		calls = append(calls, fmt.Sprintf("%s@%d mutated=%v", w.Webhook, w.Round, w.Mutated))
	}
	want := "init.example.com@0 mutated=true, label.example.com@0 mutated=true, init.example.com@1 mutated=false"
	if strings.Join(calls, ", ") != want {
		t.Errorf("calls %s\nwant  %s", strings.Join(calls, ", "), want)
	}
	if len(p.Spec.InitContainers) != 1 || p.Labels["added-label"] != "yes" {
		t.Errorf("pod after admission: init %v labels %v", p.Spec.InitContainers, p.Labels)
	}
}
