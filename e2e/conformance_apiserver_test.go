package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// conformance --apiserver: one control plane for the run; every
// scenario's pod, volume and claim are created through the API (server
// UIDs), its tokens come from the TokenRequest API, and all of it is
// deleted after the scenario.

// Against the reference driver the selected scenarios pass, each says what
// it created through the API and that it was deleted, the JUnit file
// carries it, and nothing is left: no root dir, no process, no port.
func TestConformanceAPIServerRefDriver(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	drv := startRefDriver(t, work)
	f := writeFile(t, work, "csidriver.yaml", refCSIDriver)
	want := []string{"lifecycle/persistent", "lifecycle/ephemeral", "tokens/volume-context", "node/unstage-idempotent"}
	c := runConformance(t, work, drv.Sock, "--apiserver", "-f", f, "--focus", "^("+strings.Join(want, "|")+")$")
	if c.sim.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", c.sim.Code, c.sim)
	}
	if !slices.Equal(c.order, want) {
		t.Errorf("scenarios %v, want %v", c.order, want)
	}
	for _, line := range []string{"API server: kube-apiserver v1.37.2 on etcd at https://127.0.0.1:",
		"API server: 1 input objects created through the API", "as csi-kubelet-sim-driver: cluster-admin"} {
		if !strings.Contains(c.sim.Stderr, line) {
			t.Errorf("stderr lacks %q:\n%s", line, c.sim.Stderr)
		}
	}
	// The helper and the simulated kubelet are both 1.37: no skew, judged
	// against the run's own --kubelet-version (once read as 1.0).
	if strings.Contains(c.sim.Stderr, "API server warning: kube-apiserver") {
		t.Errorf("a skew warning for the same release:\n%s", c.sim.Stderr)
	}
	for _, name := range want {
		s := c.scenarios[name]
		if s.Status != "pass" {
			t.Errorf("%s: %s: %s", name, s.Status, s.Message)
		}
		pod := "Pod default/conformance-" + strings.ReplaceAll(name, "/", "-")
		notes := strings.Join(s.Notes, "\n")
		for _, n := range []string{"API server: created through the API: ", pod + " (UID ", "API server: deleted " + pod,
			"API server: the driver (csi-kubelet-sim-driver) made 0 requests"} {
			if !strings.Contains(notes, n) {
				t.Errorf("%s: notes lack %q:\n%s", name, n, notes)
			}
		}
		if strings.HasPrefix(name, "lifecycle/persistent") || strings.HasPrefix(name, "node/") {
			for _, n := range []string{"PersistentVolume conformance-pv (UID ", "API server: deleted PersistentVolumeClaim default/conformance-claim"} {
				if !strings.Contains(notes, n) {
					t.Errorf("%s: notes lack %q:\n%s", name, n, notes)
				}
			}
		}
	}
	junit, err := os.ReadFile(filepath.Join(work, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(junit), "API server: deleted Pod default/conformance-tokens-volume-context") {
		t.Errorf("the JUnit file lacks the API server's notes:\n%s", junit)
	}
	root := filepath.Join(work, "root")
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
}

// A driver that reads a custom resource with the kubeconfig it is handed,
// has the pod's token checked by a TokenReview and writes a status owned
// by the pod (fixtures/secretsdriver): its inline-volume scenarios pass,
// its requests are in each scenario's trace, and the garbage collector
// deletes its status objects with the scenario's pod.
func TestConformanceAPIServerSecretsStore(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	sim, root := startCommandWithDriver(t, "conformance", work, sample(t, "apiserver"),
		"--volume-attributes", "secretProviderClass=vault-db", "--focus", "^(lifecycle/ephemeral|tokens/volume-context)$", "-v")
	r := sim.wait(t, simTimeout)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r)
	}
	for _, want := range []string{
		"as system:serviceaccount:secrets-store:secrets-store-csi-driver: the ServiceAccount the input's RBAC binds",
		"PASS  lifecycle/ephemeral", "PASS  tokens/volume-context",
		"[driver API request] get secretproviderclasses.secrets-store.csi.x-k8s.io default/vault-db → 200",
		"[driver API request] create tokenreviews.authentication.k8s.io → 201",
		"[driver API request] create secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io default/conformance-tokens-volume-context-default-vault-db → 201",
		"garbage collector: deleted secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io default/conformance-lifecycle-ephemeral-default-vault-db (owner Pod default/conformance-lifecycle-ephemeral)",
		"it created or changed: create secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io default/conformance-lifecycle-ephemeral-default-vault-db",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q\n%s", want, r.Stdout)
		}
	}
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
}

// Bad use: no helper is exit 3, a malformed --driver-service-account exit
// 2 (after the control plane started: it is stopped and removed), each
// one line, and nothing left.
func TestConformanceAPIServerBadUse(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	drv := startRefDriver(t, work)
	f := writeFile(t, work, "csidriver.yaml", refCSIDriver)
	root := filepath.Join(work, "root")
	args := []string{"conformance", "--apiserver", "-f", f, "--endpoint", drv.Sock, "--root-dir", root, "--node-name", simNode}
	t.Run("no-helper", func(t *testing.T) {
		cmd := exec.Command(simBin(t), args...)
		cmd.Env = append(os.Environ(), "CSI_KUBELET_SIM_APISERVER="+filepath.Join(work, "absent"))
		out, err := cmd.Output()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 3 {
			t.Fatalf("exit %v, want 3\n%s", err, out)
		}
		if msg := strings.TrimSpace(string(ee.Stderr)); !strings.Contains(msg, "--apiserver needs the helper csi-kubelet-sim-apiserver") || strings.Contains(msg, "\n") {
			t.Errorf("want one line naming the helper: %q", msg)
		}
		assertNothingLeft(t, root, work)
	})
	t.Run("driver-service-account", func(t *testing.T) {
		r := runSim(t, append(args, "--driver-service-account", "nope")...)
		wantCode(t, r, 2)
		oneLineError(t, r, `--driver-service-account "nope": want NAMESPACE/NAME`)
		assertNothingLeft(t, root, work)
		assertNoControlPlane(t, root)
	})
}

// startWaiting starts conformance --apiserver with no driver yet: the
// control plane is up and the run waits for the driver's socket.
func startWaiting(t *testing.T, work string) (*bgSim, string) {
	t.Helper()
	f := writeFile(t, work, "csidriver.yaml", refCSIDriver)
	root := filepath.Join(work, "root")
	sim := startSim(t, "conformance", "--apiserver", "-f", f, "--endpoint", filepath.Join(work, "none.sock"), "--root-dir", root,
		"--node-name", simNode, "--driver-wait", "60s")
	deadline := time.Now().Add(40 * time.Second)
	for !strings.Contains(sim.errb.String(), "waiting up to 1m0s for the driver's socket") {
		select {
		case <-sim.exited:
			t.Fatalf("exited before waiting for the driver:\n%s\n%s", sim.out.String(), sim.errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not waiting for the driver after 40s:\n%s", sim.errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return sim, root
}

// Ctrl-C while the run waits for the driver: exit 130, the control plane
// stopped and removed, nothing left.
func TestConformanceAPIServerInterrupt(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	sim, root := startWaiting(t, work)
	_ = sim.cmd.Process.Signal(syscall.SIGINT)
	r := sim.wait(t, simTimeout)
	if r.Code != 130 {
		t.Fatalf("exit %d, want 130\n%s", r.Code, r)
	}
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
}

// kill -9 while the run waits for the driver: the helper and etcd die
// with the simulator; `cleanup` removes the control plane's dir.
func TestConformanceAPIServerKillThenCleanup(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	sim, root := startWaiting(t, work)
	_ = sim.cmd.Process.Kill()
	<-sim.exited
	deadline := time.Now().Add(10 * time.Second)
	for hasControlPlaneProcess(root) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if hasControlPlaneProcess(root) {
		t.Fatal("the control plane outlived the killed simulator")
	}
	drv := startRefDriver(t, work) // cleanup talks to the driver
	r := runSim(t, "cleanup", "--root-dir", root, "--endpoint", drv.Sock, "--node-name", simNode)
	if r.Code != 0 {
		t.Fatalf("cleanup exit %d\n%s", r.Code, r)
	}
	if !strings.Contains(r.Stdout, "removed the control plane an interrupted --apiserver run left") {
		t.Errorf("cleanup does not say it removed the control plane:\n%s", r.Stdout)
	}
	assertNoControlPlane(t, root)
}
