package e2e

// conformance from the user's own pod: its CSI volumes of the driver
// become the scenarios' volumes (an inline volume's attributes and
// readOnly; a claim's StorageClass and size), where conformance used to
// ignore the pods given.

import (
	"strings"
	"testing"
)

const userPod = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: app, image: registry.k8s.io/pause:3.10}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
  - name: secrets
    csi:
      driver: ref.csi.kubelet-sim.io
      readOnly: true
      volumeAttributes: {secretProviderClass: vault-db}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  storageClassName: fast
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Mi}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: ref.csi.kubelet-sim.io
parameters: {tier: pod}
`

func TestConformanceUserPod(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	// A driver that, like the secrets-store CSI driver, wants readonly,
	// and quotes its first CreateVolume and every NodePublishVolume.
	drv := startRefDriver(t, work, "--fault", "NodePublishVolume=require-readonly", "--fault", "CreateVolume=echo:1")
	args := []string{"-f", writeFile(t, work, "csidriver.yaml", refCSIDriver), "-f", writeFile(t, work, "pod.yaml", userPod),
		"--focus", "^lifecycle/", "--parallel", "1"}
	c := runConformance(t, work, drv.Sock, args...)
	if s := c.scenarios["lifecycle/ephemeral"]; s.Status != "pass" {
		t.Errorf("lifecycle/ephemeral with the pod's readOnly inline volume: %s: %s", s.Status, s.Message)
	}
	if v := c.summary.Volume; v == nil || !strings.Contains(oneSpace(v.Error), `parameters:{key:"tier" value:"pod"}`) || !strings.Contains(oneSpace(v.Error), "required_bytes:2097152") {
		t.Errorf("CreateVolume %+v: want the claim's class's parameters and the claim's 2Mi", v)
	}
	if want := `the scenarios' volumes follow pod default/web: the claim "data"'s StorageClass and size, the inline volume "secrets" (volumeAttributes, readOnly true)`; !strings.Contains(c.sim.Stderr, want) {
		t.Errorf("stderr %q: want %q", c.sim.Stderr, want)
	}
}

// The secrets-store sample as a user gives it: no --volume-attributes, the
// pod's own inline volume (secretProviderClass, readOnly) drives the
// inline scenarios, and they pass against the secrets driver.
func TestConformanceAPIServerSecretsStoreFromPod(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	sim, root := startCommandWithDriver(t, "conformance", work, sample(t, "apiserver"),
		"--focus", "^(lifecycle/ephemeral|tokens/volume-context)$")
	r := sim.wait(t, simTimeout)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r)
	}
	for _, want := range []string{"PASS  lifecycle/ephemeral", "PASS  tokens/volume-context"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q\n%s", want, r.Stdout)
		}
	}
	if want := `the scenarios' volumes follow pod default/web: the inline volume "secrets" (volumeAttributes, readOnly true)`; !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr lacks %q\n%s", want, r.Stderr)
	}
	assertNothingLeft(t, root, work)
	assertNoControlPlane(t, root)
}
