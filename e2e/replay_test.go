package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// `run --kubeconfig FILE --pod NAMESPACE/NAME`, end to end against the real
// kube-apiserver of --apiserver (cluster.Start): the objects of a sample
// are created in it as a user would, and the pod replayed from it against
// the reference driver makes the same CSI calls, with the same requests,
// as the same sample run from its files; only the pod's UID (the API
// server's) and the root dir differ.

// replayCluster is a control plane with a sample's objects in it.
type replayCluster struct {
	cp         *cluster.ControlPlane
	admin      kubernetes.Interface
	kubeconfig string
}

func startReplayCluster(t *testing.T, work string) *replayCluster {
	t.Helper()
	apiserverHelper(t)
	if os.Getenv(cluster.HelperEnv) == "" {
		t.Setenv(cluster.HelperEnv, filepath.Join(filepath.Dir(simBin(t)), cluster.HelperName))
	}
	cp, err := cluster.Start(context.Background(), cluster.Config{Root: filepath.Join(work, "cp"), NodeName: simNode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	cfg := &rest.Config{Host: cp.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: cp.CAFile, CertFile: cp.Admin.Cert, KeyFile: cp.Admin.Key}}
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &replayCluster{cp: cp, admin: admin, kubeconfig: writeKubeconfig(t, work, "admin", cfg)}
}

// writeKubeconfig writes a kubeconfig for a client config.
func writeKubeconfig(t *testing.T, dir, name string, c *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthority: c.CAFile}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: c.CertFile, ClientKey: c.KeyFile, Token: c.BearerToken}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	p := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// create makes the objects of manifests in the API server, with their
// namespaces and each namespace's ServiceAccount "default" (the
// controller manager's, which this control plane does not run).
func (rc *replayCluster) create(t *testing.T, path string) {
	t.Helper()
	l := &manifests.Loader{}
	c, err := l.Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, obj := range c.Objects() {
		if m, ok := obj.(metav1.Object); ok && m.GetNamespace() != "" {
			rc.namespace(t, m.GetNamespace())
		}
		var err error
		switch o := obj.(type) {
		case *storagev1.CSIDriver:
			_, err = rc.admin.StorageV1().CSIDrivers().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			_, err = rc.admin.CoreV1().Secrets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.PersistentVolume:
			_, err = rc.admin.CoreV1().PersistentVolumes().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.PersistentVolumeClaim:
			err = rc.bind(ctx, o)
		case *corev1.ServiceAccount:
			_, err = rc.admin.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Pod:
			_, err = rc.admin.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("create: %T not handled", obj)
		}
		if err != nil {
			t.Fatalf("create %s: %v", manifests.ObjectName(obj), err)
		}
	}
}

// bind creates a claim and, bound to a PV, marks both Bound as the PV
// controller (which this control plane does not run) would.
func (rc *replayCluster) bind(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	created, err := rc.admin.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil || pvc.Spec.VolumeName == "" {
		return err
	}
	created.Status.Phase = corev1.ClaimBound
	created.Status.AccessModes = created.Spec.AccessModes
	created.Status.Capacity = created.Spec.Resources.Requests
	if _, err := rc.admin.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return err
	}
	pv, err := rc.admin.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pv.Status.Phase = corev1.VolumeBound
	_, err = rc.admin.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{})
	return err
}

func (rc *replayCluster) namespace(t *testing.T, ns string) {
	ctx := context.Background()
	_, err := rc.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, err = rc.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// callView is what a call is compared by: the method, its request with the
// root dir and pod UID replaced, its response and result.
func callViews(t *testing.T, r simResult, root, uid string) []string {
	t.Helper()
	var out []string
	for _, c := range calls(parseTrace(t, r)) {
		s := fmt.Sprintf("%s %s %s code=%s err=%s req=%v resp=%v", c.Operation, c.Method, c.Volume, c.Code, c.Error, c.Request, c.Response)
		s = strings.ReplaceAll(s, root, "<root>")
		if uid != "" {
			s = strings.ReplaceAll(s, uid, "<pod uid>")
		}
		out = append(out, s)
	}
	return out
}

// TestRunReplayPodFromCluster: the secrets sample (CSIDriver, two Secrets
// in another namespace, PV with stage and publish secret refs, claim,
// pod) created in the API server, then replayed with --kubeconfig --pod:
// the same calls and requests as the run from the files, the pod's UID the
// API server's, the Secrets read from the cluster (sent to the driver,
// shown only with --show-secrets).
func TestRunReplayPodFromCluster(t *testing.T) {
	work := workDir(t)
	rc := startReplayCluster(t, work)
	rc.create(t, sample(t, "secrets"))
	pod, err := rc.admin.CoreV1().Pods("default").Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	drv := startRefDriver(t, work)
	ep := "unix://" + drv.Sock
	fileRoot, liveRoot := filepath.Join(work, "root-file"), filepath.Join(work, "root-live")
	started := time.Now()
	fromFiles := runSim(t, "run", "-f", sample(t, "secrets"), "--endpoint", ep, "--root-dir", fileRoot, "--node-name", simNode, "-o", "json")
	fileTime := time.Since(started)
	wantCode(t, fromFiles, 0)
	auditFrom := fileSize(t, rc.cp.AuditLog)
	started = time.Now()
	replay := runSim(t, "run", "--kubeconfig", rc.kubeconfig, "--pod", "default/app", "--endpoint", ep, "--root-dir", liveRoot, "--node-name", simNode, "-o", "json")
	t.Logf("run from files %s, replayed from the API server %s", fileTime.Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	wantCode(t, replay, 0)
	got := callViews(t, replay, liveRoot, string(pod.UID))
	want := callViews(t, fromFiles, fileRoot, "9a3c3c6e-4444-4d2b-9c51-0e2f8d1a7b04")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the replay's calls differ from the run's from files:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	// A bound claim's volume is the cluster's: used as it is, never
	// created, deleted, or attached again by the replay.
	for _, c := range calls(parseTrace(t, replay)) {
		switch c.Method {
		case "CreateVolume", "DeleteVolume", "ControllerPublishVolume", "ControllerUnpublishVolume":
			t.Errorf("the replay of a bound claim called %s: %v", c.Method, c.Request)
		}
	}
	if !strings.Contains(replay.Stdout, string(pod.UID)) {
		t.Errorf("the pod's UID %s (the API server's) is not in the replay's trace", pod.UID)
	}
	for _, secret := range []string{"s3cr3t-stage", "publish-secret"} {
		if strings.Contains(replay.Stdout+replay.Stderr, secret) {
			t.Errorf("the replay prints the Secret's value %q without --show-secrets", secret)
		}
	}
	// validate judges the same objects: valid, nothing missing.
	v := runSim(t, "validate", "--kubeconfig", rc.kubeconfig, "--pod", "default/app")
	wantCode(t, v, 0)
	if !strings.Contains(v.Stdout, "cluster "+rc.cp.URL+": CSIDriver "+refDriverName+": valid") {
		t.Errorf("validate --pod: no verdict on the CSIDriver read from the cluster:\n%s", v)
	}
	// plan reads the same input: the calls without a driver.
	plan := runSim(t, "plan", "--kubeconfig", rc.kubeconfig, "--pod", "default/app", "--node-name", simNode)
	wantCode(t, plan, 0)
	if !strings.Contains(plan.Stdout, "NodePublishVolume") || !strings.Contains(plan.Stdout, string(pod.UID)) {
		t.Errorf("plan --pod: no NodePublishVolume for the pod %s:\n%s", pod.UID, plan)
	}
	shown := runSim(t, "run", "--kubeconfig", rc.kubeconfig, "--pod", "default/app", "--endpoint", ep, "--node-name", simNode, "--show-secrets", "-v")
	wantCode(t, shown, 0)
	if !strings.Contains(shown.Stdout, "s3cr3t-stage") || !strings.Contains(shown.Stdout, "publish-secret") {
		t.Errorf("--show-secrets: the Secrets read from the cluster are not what the driver got:\n%s", shown)
	}
	checkReadOnly(t, rc.cp.AuditLog, auditFrom)
}

func fileSize(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// checkReadOnly: every request in the API server's audit log from offset
// on (the replays' only) is a get of a named object: no list, no watch,
// no write.
func checkReadOnly(t *testing.T, auditLog string, offset int64) {
	t.Helper()
	b, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b[offset:])), "\n") {
		var ev struct {
			Verb       string                    `json:"verb"`
			RequestURI string                    `json:"requestURI"`
			User       struct{ Username string } `json:"user"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.User.Username != "csi-kubelet-sim" {
			continue
		}
		n++
		if ev.Verb != "get" {
			t.Errorf("the replay made a %s request: %s", ev.Verb, ev.RequestURI)
		}
	}
	if n == 0 {
		t.Error("no request of the replay in the audit log")
	}
}

// TestRunReplayErrors: a pod that is not there or that the kubeconfig's
// user may not read is bad input (exit 2, named, the API server's
// message); a cluster that does not answer is the environment (exit 3);
// an object the pod's volume names that the cluster lacks is said, named,
// and the kubelet fails the mount as a real one would (exit 2, as the same
// Secret missing from manifests); and no combination with -f.
func TestRunReplayErrors(t *testing.T) {
	work := workDir(t)
	rc := startReplayCluster(t, work)
	rc.create(t, sample(t, "secrets"))
	drv := startRefDriver(t, work)
	ep := "unix://" + drv.Sock
	run := func(args ...string) simResult {
		return runSim(t, append([]string{"run", "--endpoint", ep, "--node-name", simNode}, args...)...)
	}
	t.Run("pod-not-found", func(t *testing.T) {
		r := run("--kubeconfig", rc.kubeconfig, "--pod", "default/nope")
		wantCode(t, r, 2)
		oneLineError(t, r, "Pod default/nope", `pods "nope" not found`)
	})
	t.Run("forbidden", func(t *testing.T) {
		ctx := context.Background()
		if _, err := rc.admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := rc.admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kc := writeKubeconfig(t, work, "nobody", &rest.Config{Host: rc.cp.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: rc.cp.CAFile}, BearerToken: tr.Status.Token})
		r := run("--kubeconfig", kc, "--pod", "default/app")
		wantCode(t, r, 2)
		oneLineError(t, r, "Pod default/app", `pods "app" is forbidden: User "system:serviceaccount:default:nobody" cannot get resource "pods"`)
		if strings.Contains(r.Stderr, tr.Status.Token) {
			t.Error("the token is printed")
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		closed := "https://" + refusedAddr(t)
		kc := writeKubeconfig(t, work, "closed", &rest.Config{Host: closed, TLSClientConfig: rest.TLSClientConfig{CAFile: rc.cp.CAFile}})
		r := run("--kubeconfig", kc, "--pod", "default/app")
		wantCode(t, r, 3)
		oneLineError(t, r, "cannot be reached", closed)
		v := runSim(t, "validate", "--kubeconfig", kc, "--pod", "default/app")
		wantCode(t, v, 3)
	})
	t.Run("no-kubeconfig-file", func(t *testing.T) {
		r := run("--kubeconfig", filepath.Join(work, "absent"), "--pod", "default/app")
		wantCode(t, r, 2)
		oneLineError(t, r, "--kubeconfig", "absent")
	})
	t.Run("with-files", func(t *testing.T) {
		r := run("--kubeconfig", rc.kubeconfig, "--pod", "default/app", "-f", sample(t, "secrets"))
		wantCode(t, r, 2)
		oneLineError(t, r, "--pod reads the input from the cluster")
	})
	t.Run("missing-secret", func(t *testing.T) {
		if err := rc.admin.CoreV1().Secrets("storage").Delete(context.Background(), "publish-creds", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		r := run("--kubeconfig", rc.kubeconfig, "--pod", "default/app")
		wantCode(t, r, 2)
		if !strings.Contains(r.Stderr, `Secret storage/publish-creds (named by PersistentVolume pv-secure spec.csi.nodePublishSecretRef) is not in the cluster at `+rc.cp.URL+`: secrets "publish-creds" not found`) {
			t.Errorf("the missing Secret is not named:\n%s", r)
		}
		if !strings.Contains(r.Stdout, `failed to find the secret publish-creds in the namespace storage`) {
			t.Errorf("the kubelet's error for the missing Secret is not in the trace:\n%s", r)
		}
		v := runSim(t, "validate", "--kubeconfig", rc.kubeconfig, "--pod", "default/app")
		wantCode(t, v, 2)
		if !strings.Contains(v.Stdout, "PersistentVolume pv-secure: spec.csi.nodePublishSecretRef: Secret storage/publish-creds not found") {
			t.Errorf("validate --pod: the missing Secret is not a finding:\n%s", v)
		}
	})
}
