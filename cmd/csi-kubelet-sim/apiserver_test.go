package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// needAPIServer skips without the helper and etcd (`make apiserver-helper`;
// make test builds both and sets $CSI_KUBELET_SIM_APISERVER).
func needAPIServer(t *testing.T) {
	t.Helper()
	if _, err := cluster.HelperPath(); err != nil {
		t.Skip(err)
	}
	if _, err := cluster.EtcdPath(); err != nil {
		t.Skip(err)
	}
}

// An input with a custom resource, RBAC for a ServiceAccount and a pod,
// for a driver that answers but reads nothing.
const apiserverInput = csiDriverYAML + "---\n" + `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: team}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: drv, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: drv}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: drv, namespace: kube-system}]
---
` + inlinePodYAML

// run and load --apiserver against the fake: the objects go through the
// API (the CRD and its custom resource in a namespace the input only
// names), the driver's identity is the bound ServiceAccount, the pod is the
// API server's (another UID than the input's), and the JSON summary has
// the API server's object.
func TestRunAPIServerInProcess(t *testing.T) {
	needAPIServer(t)
	for _, command := range []string{"run", "load"} {
		t.Run(command, func(t *testing.T) {
			d := csifake.New(csifake.Config{Name: testDriver, VendorVersion: "1", NodeID: "n1", ManageTargets: true})
			sock := csifake.ServeTest(t, d)
			root := filepath.Join(t.TempDir(), "root")
			kc := filepath.Join(t.TempDir(), "driver.kubeconfig")
			stdout, stderr, code := cli(t, apiserverInput, command, "--apiserver", "-f", "-", "--endpoint", sock, "--root-dir", root,
				"--node-name", "n1", "--driver-kubeconfig", kc, "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			for _, want := range []string{"Namespace team", "as system:serviceaccount:kube-system:drv", `"kind":"apiserver"`} {
				if !strings.Contains(stdout, want) {
					t.Errorf("no %q in\n%s", want, stdout)
				}
			}
			for _, c := range d.Calls() {
				if c.Method != "NodePublishVolume" {
					continue
				}
				b, _ := json.Marshal(c.Request)
				if strings.Contains(string(b), "9a3c3c6e-1111-4d2b-9c51-0e2f8d1a7b01") {
					t.Errorf("NodePublishVolume has the input's pod UID, not the API server's: %s", b)
				}
			}
		})
	}
}

// The API server's refusal names the object and its message: exit 2.
func TestRunAPIServerRefusal(t *testing.T) {
	needAPIServer(t)
	d := csifake.New(csifake.Config{Name: testDriver, VendorVersion: "1", NodeID: "n1", ManageTargets: true})
	sock := csifake.ServeTest(t, d)
	in := strings.Replace(inlinePodYAML, "spec:\n", "spec:\n  serviceAccountName: nobody\n", 1)
	_, stderr, code := cli(t, csiDriverYAML+"---\n"+in, "run", "--apiserver", "-f", "-", "--endpoint", sock, "--node-name", "n1")
	if code != session.ExitUsage || !strings.Contains(stderr, `the API server refused Pod default/web: pods "web" is forbidden: error looking up service account default/nobody`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// --pod's usage errors, before anything is read.
func TestReplayUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", "kc"}, "--kubeconfig needs --pod NAMESPACE/NAME"},
		{[]string{"--pod", "shop/web/x"}, `--pod "shop/web/x": want NAMESPACE/NAME`},
		{[]string{"--pod", "default/web", "--apiserver"}, "--pod reads a live cluster, --apiserver makes one: not both"},
		{[]string{"--pod", "default/web", "--kubeconfig", "/nonexistent/kc"}, "--kubeconfig: /nonexistent/kc: "},
	} {
		args := append([]string{"run", "--endpoint", "/nonexistent.sock", "--node-name", "n1"}, tc.args...)
		_, stderr, code := cli(t, "", args...)
		if code != session.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// --driver-service-account names the driver's identity; one the API
// server does not have is bad usage (exit 2), and nothing is left.
func TestDriverServiceAccountFlag(t *testing.T) {
	needAPIServer(t)
	d := csifake.New(csifake.Config{Name: testDriver, VendorVersion: "1", NodeID: "n1", ManageTargets: true})
	sock := csifake.ServeTest(t, d)
	in := csiDriverYAML + "---\n" + inlinePodYAML
	stdout, stderr, code := cli(t, in, "run", "--apiserver", "-f", "-", "--endpoint", sock, "--node-name", "n1", "--driver-service-account", "default/default")
	if code != 0 || !strings.Contains(stdout, "as system:serviceaccount:default:default: --driver-service-account") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	root := filepath.Join(t.TempDir(), "root")
	_, stderr, code = cli(t, in, "run", "--apiserver", "-f", "-", "--endpoint", sock, "--root-dir", root, "--node-name", "n1", "--driver-service-account", "kube-system/nobody")
	if code != session.ExitUsage || !strings.Contains(stderr, `--driver-service-account: a token for the driver's ServiceAccount kube-system/nobody: serviceaccounts "nobody" not found`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("root dir left: %v", err)
	}
}
