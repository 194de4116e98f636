package realkubelet

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/cri-client/pkg/fake"
)

const nodeName = "sim-node"

// stack is etcd, kube-apiserver, the fake container runtime and the
// kubelet, all on loopback, under base.
type stack struct {
	ctx     context.Context // the test's, cancelled at its end
	base    string
	client  kubernetes.Interface
	kubelet *process
	saKey   string // the service-account signing key (PEM)
	// kubeletStarted is when the kubelet process was started: its stats
	// analyzer ticks from about then.
	kubeletStarted time.Time
	// How the kubelet is started (startKubelet), and its --feature-gates
	// now.
	kubeletBin   string
	kubeletFlags []string
	healthz      string
	logs         string
	gates        string
	starts       int
	reg          *registrar // the driver's registration (setup)
	// driver is the CSIDriver in the API now (useDriver), if any.
	driver *storagev1.CSIDriver
	// Times of the start-up steps, for the README.
	times []string
}

func (s *stack) timed(step string, d time.Duration) {
	s.times = append(s.times, fmt.Sprintf("%s %.1fs", step, d.Seconds()))
}

// binaries are the kubelet and kube-apiserver built by `make realkubelet`
// (no kube-apiserver at helperRelease: the stack uses the API server
// helper then), and etcd.
func binaries(t *testing.T) (kubelet, apiserver, etcd string) {
	dir := os.Getenv("REALKUBELET_BIN")
	if dir == "" {
		dir = "../../bin/realkubelet/" + kubeVersion()
	}
	kubelet, apiserver = filepath.Join(dir, "kubelet"), filepath.Join(dir, "kube-apiserver")
	etcd = os.Getenv("REALKUBELET_ETCD")
	if etcd == "" {
		etcd = "/usr/bin/etcd"
	}
	need := []string{kubelet, etcd}
	if apiserverHelper(t) == "" {
		need = append(need, apiserver)
	}
	for _, b := range need {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("%v (run `make realkubelet`, which builds the kubelet and API server and installs etcd-server)", err)
		}
	}
	k, _ := filepath.Abs(kubelet)
	a, _ := filepath.Abs(apiserver)
	return k, a, etcd
}

// startStack starts everything and waits until the kubelet's Node is Ready.
// The registration of the driver is the caller's (registrar).
func startStack(ctx context.Context, t *testing.T, base string, statsPeriod time.Duration) *stack {
	kubeletBin, apiserverBin, etcdBin := binaries(t)
	s := &stack{base: base}
	logs := filepath.Join(base, "logs")
	mkdirs(t, logs, filepath.Join(base, "etcd"), filepath.Join(base, "apiserver"), filepath.Join(base, "kubelet-cwd"), filepath.Join(base, "volume-plugins"))
	t.Cleanup(func() { keepLogs(t, logs) })
	ports := freePorts(t, 2)
	kubeletPort, healthzPort := ports[0], ports[1]
	token := randomHex(t)
	start := time.Now()
	apiURL := s.startControlPlane(ctx, t, apiserverBin, etcdBin, token).url
	cfg := &rest.Config{Host: apiURL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	var err error
	if s.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	s.clusterObjects(ctx, t)

	runtimeSock := filepath.Join(base, "cri.sock")
	runtime := fake.NewFakeRemoteRuntime()
	// Size 0 leaves the pod in CreateContainerConfigError.
	runtime.ImageService.SetFakeImageSize(1 << 20)
	if err := runtime.Start("unix://" + runtimeSock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runtime.Stop)

	kubeconfig := filepath.Join(base, "kubeconfig")
	writeFile(t, kubeconfig, fmt.Sprintf(kubeconfigTmpl, apiURL, token))
	config := filepath.Join(base, "kubelet.yaml")
	writeFile(t, config, fmt.Sprintf(kubeletConfigTmpl, kubeletPort, healthzPort, "unix://"+runtimeSock, filepath.Join(base, "volume-plugins"), statsAggPeriod(statsPeriod)))
	s.kubeletBin, s.logs = kubeletBin, logs
	s.kubeletFlags = []string{"--config", config, "--kubeconfig", kubeconfig, "--root-dir", kubeletRoot,
		"--hostname-override", nodeName, "--v", kubeletVerbosity()}
	s.healthz = fmt.Sprintf("http://127.0.0.1:%d/healthz", healthzPort)
	t.Cleanup(func() {
		if s.kubelet != nil {
			s.kubelet.stop(t)
		}
	})
	s.startKubelet(ctx, t, "")
	s.timed("stack up", time.Since(start))
	return s
}

// kubeletRoot is the kubelet's root dir: the kubelet writes
// /var/lib/kubelet/device-plugins whatever --root-dir says, so it keeps the
// default, which is a temp dir bind-mounted in the test's namespace.
const kubeletRoot = "/var/lib/kubelet"

func (s *stack) nodeReady(ctx context.Context) error {
	n, err := s.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("Ready %s: %s", c.Status, c.Message)
		}
	}
	return fmt.Errorf("no Ready condition")
}

// csiNodeHas is a readiness check: the kubelet wrote the driver into the
// node's CSINode.
func (s *stack) csiNodeHas(driver string) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := s.client.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hasDriver(n, driver) {
			return nil
		}
		return fmt.Errorf("CSINode %s lists no %s", nodeName, driver)
	}
}

func hasDriver(n *storagev1.CSINode, driver string) bool {
	for _, d := range n.Spec.Drivers {
		if d.Name == driver {
			return true
		}
	}
	return false
}

// clusterObjects are what kube-controller-manager would make and the pods
// need: the service accounts (ServiceAccount admission looks them up) and
// the kube-root-ca.crt ConfigMap of their kube-api-access volume.
func (s *stack) clusterObjects(ctx context.Context, t *testing.T) {
	for _, sa := range []string{"default", "web-sa"} {
		o := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: "default"}}
		if _, err := s.client.CoreV1().ServiceAccounts("default").Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("ServiceAccount %s: %v", sa, err)
		}
	}
	ca, err := os.ReadFile(filepath.Join(s.base, "apiserver", "apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"}, Data: map[string]string{"ca.crt": string(ca)}}
	if _, err := s.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("ConfigMap kube-root-ca.crt: %v", err)
	}
}

const kubeconfigTmpl = `apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`

// The settings that let a kubelet run on a host like a CI VM (cgroup v1, no
// iptables, no swap rule, no eviction on a full disk) without changing it,
// reachable on loopback only; a short sync period; the volume stats period
// of the test (0: none, as the simulator's --volume-stats-agg-period 0).
const kubeletConfigTmpl = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
healthzBindAddress: 127.0.0.1
healthzPort: %d
readOnlyPort: 0
containerRuntimeEndpoint: %s
volumePluginDir: %s
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
makeIPTablesUtilChains: false
protectKernelDefaults: false
localStorageCapacityIsolation: false
evictionHard: {}
mergeDefaultEvictionSettings: false
syncFrequency: 10s
volumeStatsAggPeriod: %s
resolvConf: ""
`

func mkdirs(t *testing.T, dirs ...string) {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, p, content string) {
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// writeKey writes a new RSA key as PEM and returns its path.
func writeKey(t *testing.T, p string) string {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	writeFile(t, p, string(b))
	return p
}

// keepLogs copies the stack's logs to REALKUBELET_OUT/logs/<test> (the
// temp dir goes with the test).
func keepLogs(t *testing.T, logs string) {
	out := os.Getenv("REALKUBELET_OUT")
	if out == "" {
		return
	}
	dst := filepath.Join(out, "logs", t.Name())
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Log(err)
		return
	}
	entries, _ := os.ReadDir(logs)
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(logs, e.Name())); err == nil {
			_ = os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
		}
	}
	t.Logf("the stack's logs are in %s", dst)
}

// statsAggPeriod is the KubeletConfiguration's volumeStatsAggPeriod for a
// period, 0 for none: in the file 0 means the default (1m, as the defaults
// of pkg/kubelet/apis/config/v1beta1 set it), a negative period turns the
// stats off (fsResourceAnalyzer.Start).
func statsAggPeriod(d time.Duration) string {
	if d <= 0 {
		return "-1s"
	}
	return d.String()
}

// kubeletVerbosity is the kubelet's --v: REALKUBELET_V, default 2.
func kubeletVerbosity() string {
	if v := os.Getenv("REALKUBELET_V"); v != "" {
		return v
	}
	return "2"
}

// kubeVersion is the Kubernetes release of the binaries: REALKUBELET_VERSION
// (the Makefile's KUBE_VERSION), default v1.37.2.
func kubeVersion() string {
	if v := os.Getenv("REALKUBELET_VERSION"); v != "" {
		return v
	}
	return "v1.37.2"
}

// kubeMinorVersion is the release as the simulator's --kubelet-version
// takes it ("1.37").
func kubeMinorVersion() string {
	parts := strings.SplitN(strings.TrimPrefix(kubeVersion(), "v"), ".", 3)
	if len(parts) < 2 {
		return kubeVersion()
	}
	return parts[0] + "." + parts[1]
}

// kubeMinor is the release's minor (37).
func kubeMinor() int {
	var major, minor int
	_, _ = fmt.Sscanf(kubeMinorVersion(), "%d.%d", &major, &minor)
	return minor
}
