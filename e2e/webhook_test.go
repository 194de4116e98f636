package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/fixtures/webhook"
)

const webhookPodUID = "5f0c7a52-3333-4e0b-8f6d-3b1c9d2e4a10"

// webhookManifests: a CSIDriver with pod info on mount, a namespace, a pod
// with no volume at all, and a MutatingWebhookConfiguration whose service
// is the webhook under test.
func webhookManifests(caBundle []byte, failurePolicy, path string) string {
	return fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: %[1]s
spec:
  attachRequired: false
  podInfoOnMount: true
  volumeLifecycleModes: [Ephemeral]
---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
  labels: {team: payments}
---
apiVersion: v1
kind: Pod
metadata:
  name: checkout
  namespace: shop
  uid: %[2]s
  labels:
    inject.kubelet-sim.io/volume: "true"
spec:
  serviceAccountName: checkout
  containers:
    - name: app
      image: registry.k8s.io/pause:3.10
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: volume-injector
webhooks:
  - name: volume-injector.kubelet-sim.io
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: %[4]s
    namespaceSelector:
      matchLabels: {team: payments}
    rules:
      - operations: [CREATE]
        apiGroups: [""]
        apiVersions: [v1]
        resources: [pods]
    clientConfig:
      service: {namespace: webhooks, name: volume-injector, path: %[5]s}
      caBundle: %[3]s
`, refDriverName, webhookPodUID, base64.StdEncoding.EncodeToString(caBundle), failurePolicy, path)
}

// startInjector serves the demo webhook (fixtures/webhook) over HTTPS with
// its own CA, and /deny, which refuses every pod.
func startInjector(t *testing.T) (addr string, ca *webhook.CA) {
	t.Helper()
	ca, err := webhook.NewCA("volume-injector.webhooks.svc")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/inject", &webhook.Injector{Driver: refDriverName, MountPath: "/mnt/secrets", Attributes: map[string]string{"secretProviderClass": "e2e"}})
	mux.HandleFunc("/deny", func(w http.ResponseWriter, r *http.Request) {
		var review map[string]any
		_ = json.NewDecoder(r.Body).Decode(&review)
		uid := review["request"].(map[string]any)["uid"]
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
			"response": map[string]any{"uid": uid, "allowed": false, "status": map[string]any{"code": 403, "message": "no pods on Fridays"}}})
	})
	ctx, cancel := context.WithCancel(context.Background())
	addr, done, err := webhook.Serve(ctx, "127.0.0.1:0", ca, mux)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
	return addr, ca
}

// TestWebhookInjectedVolume: the pod as written has no volume; the webhook
// adds a CSI inline volume, and the kubelet publishes it with the pod info
// of podInfoOnMount and csi.storage.k8s.io/ephemeral (docs/kubelet.md §1.5, §8).
func TestWebhookInjectedVolume(t *testing.T) {
	addr, ca := startInjector(t)
	work := workDir(t)
	manifest := filepath.Join(work, "pod.yaml")
	if err := os.WriteFile(manifest, []byte(webhookManifests(ca.PEM, "Fail", "/inject")), 0o644); err != nil {
		t.Fatal(err)
	}
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	r := runSim(t, "run", "-f", manifest, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"--webhook-service", "webhooks/volume-injector="+addr, "-o", "json")
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)

	var admitted bool
	for _, line := range strings.Split(r.Stdout, "\n") {
		var a struct {
			Kind     string `json:"kind"`
			Object   string `json:"object"`
			Webhooks []struct {
				Webhook string   `json:"webhook"`
				Called  bool     `json:"called"`
				Mutated bool     `json:"mutated"`
				Changes []string `json:"changes"`
			} `json:"webhooks"`
		}
		if json.Unmarshal([]byte(line), &a) != nil || a.Kind != "admission" || a.Object != "Pod shop/checkout" {
			continue
		}
		admitted = len(a.Webhooks) == 1 && a.Webhooks[0].Called && a.Webhooks[0].Mutated &&
			strings.Contains(strings.Join(a.Webhooks[0].Changes, "\n"), "added volume injected-secrets (CSI inline, driver "+refDriverName)
	}
	if !admitted {
		t.Errorf("no admission line showing the injected volume\n%s", r)
	}
	var publish *traceLine
	for _, c := range calls(parseTrace(t, r)) {
		if c.Method == "NodePublishVolume" {
			c := c
			publish = &c
		}
	}
	if publish == nil {
		t.Fatalf("no NodePublishVolume\n%s", r)
	}
	want := map[string]any{
		"csi.storage.k8s.io/ephemeral":           "true",
		"csi.storage.k8s.io/pod.name":            "checkout",
		"csi.storage.k8s.io/pod.namespace":       "shop",
		"csi.storage.k8s.io/pod.uid":             webhookPodUID,
		"csi.storage.k8s.io/serviceAccount.name": "checkout",
		"secretProviderClass":                    "e2e",
	}
	if ok, diff := jsonEqual(publish.Request["volume_context"], want); !ok {
		t.Errorf("volume_context:\n%s", diff)
	}
	if got, want := publish.Request["target_path"], targetPath(root, webhookPodUID, webhook.VolumeName); got != want {
		t.Errorf("target_path %v, want %v", got, want)
	}
	if publish.Request["readonly"] != true {
		t.Errorf("readonly: %v", publish.Request["readonly"])
	}
}

// TestWebhookRefusal: a denial and an unreachable webhook under
// failurePolicy Fail stop the run before the node (exit 2, the webhook
// named); under Ignore the pod goes on unchanged.
func TestWebhookRefusal(t *testing.T) {
	addr, ca := startInjector(t)
	refused := refusedAddr(t)
	cases := []struct {
		name, policy, path, addr string
		code                     int
		stderr                   string
	}{
		{"denied", "Fail", "/deny", addr, 2, `admission webhook "volume-injector.kubelet-sim.io" denied the request: no pods on Fridays`},
		{"unreachable", "Fail", "/inject", refused, 2, `failed calling webhook "volume-injector.kubelet-sim.io"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			work := workDir(t)
			manifest := filepath.Join(work, "pod.yaml")
			if err := os.WriteFile(manifest, []byte(webhookManifests(ca.PEM, tc.policy, tc.path)), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runSim(t, "plan", "-f", manifest, "--root-dir", filepath.Join(work, "root"), "--node-name", simNode,
				"--webhook-service", "webhooks/volume-injector="+tc.addr)
			wantCode(t, r, tc.code)
			if !strings.Contains(r.Stderr, tc.stderr) {
				t.Errorf("stderr does not say %q\n%s", tc.stderr, r)
			}
			if strings.Contains(r.Stdout, "NodePublishVolume") {
				t.Errorf("the node flow ran for a refused pod\n%s", r)
			}
		})
	}
}

// TestWebhookConformance: conformance's pods go through the input's
// mutating webhooks as the API server would run them on create: a webhook
// that refuses every pod makes the scenario fail, saying so.
func TestWebhookConformance(t *testing.T) {
	addr, ca := startInjector(t)
	work := workDir(t)
	manifest := filepath.Join(work, "conf.yaml")
	all := webhookManifests(ca.PEM, "Fail", "/deny")
	// Every namespace: conformance makes its pods where it wants.
	all = strings.Replace(all, "    namespaceSelector:\n      matchLabels: {team: payments}\n", "", 1)
	var keep []string
	for _, doc := range strings.Split(all, "---\n") {
		if !strings.Contains(doc, "kind: Pod\n") {
			keep = append(keep, doc)
		}
	}
	if err := os.WriteFile(manifest, []byte(strings.Join(keep, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	drv := startRefDriver(t, work)
	c := runConformance(t, work, drv.Sock, "-f", manifest, "--focus", "^lifecycle/ephemeral$",
		"--webhook-service", "webhooks/volume-injector="+addr)
	wantCode(t, c.sim, 1)
	sc, ok := c.scenarios["lifecycle/ephemeral"]
	if !ok || sc.Status != "fail" || !strings.Contains(sc.Message, "no pods on Fridays") {
		t.Errorf("lifecycle/ephemeral = %+v, want a failure naming the webhook's refusal\n%s", sc, c.sim)
	}
}

// TestWebhookHelperMissing: the API server's webhook code lives in the
// helper csi-kubelet-sim-admission beside the simulator. A simulator
// installed without it still runs inputs without webhooks; one with
// webhooks exits 3 (the environment) with one line that says what to do.
func TestWebhookHelperMissing(t *testing.T) {
	refused := refusedAddr(t)
	work := workDir(t)
	lone := filepath.Join(work, "bin", "csi-kubelet-sim")
	if err := os.MkdirAll(filepath.Dir(lone), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(simBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(manifest string) simResult {
		cmd := exec.Command(lone, "plan", "-f", manifest, "--root-dir", filepath.Join(work, "root"), "--node-name", simNode,
			"--webhook-service", "webhooks/volume-injector="+refused)
		cmd.Env = []string{"PATH=" + filepath.Join(work, "bin")}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		r := simResult{Args: cmd.Args[1:], Stdout: out.String(), Stderr: errb.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.Code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := run(sample(t, "staged")); r.Code != 0 {
		t.Errorf("no webhooks, no helper: exit %d, want 0\n%s", r.Code, r)
	}
	manifest := filepath.Join(work, "pod.yaml")
	if err := os.WriteFile(manifest, []byte(webhookManifests(nil, "Fail", "/inject")), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(manifest)
	wantCode(t, r, 3)
	oneLineError(t, r, "csi-kubelet-sim-admission")
	if !strings.Contains(r.Stderr, "make install") {
		t.Errorf("the error does not say how to get the helper:\n%s", r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "root")); !os.IsNotExist(err) {
		t.Errorf("the refused run left its root dir (%v)", err)
	}
}
