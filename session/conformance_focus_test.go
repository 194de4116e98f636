package session

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/admission"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/controlplane"
)

// The line a failure prints to run that scenario again keeps every flag
// that decides what the scenario sends and to whom: a rerun of a
// secrets-store scenario without --read-only fails on Readonly, one without
// --apiserver has no API server for the driver, one with another
// --node-name sends another node ID.
func TestRerunHintKeepsScenarioFlags(t *testing.T) {
	o := &ConformanceOptions{
		EndpointFlag:     EndpointFlag{Endpoint: "/tmp/ss/csi.sock"},
		TimeoutFlag:      TimeoutFlag{Timeout: 30 * time.Second},
		ReleaseFlags:     ReleaseFlags{KubeletVersion: "1.33", FeatureGates: "SELinuxMount=true"},
		Filenames:        []string{"deploy/", "app.yaml"},
		Recursive:        true,
		VolumeHandle:     "vol 1",
		VolumeAttributes: map[string]string{"secretProviderClass": "e2e-foo", "list": "a,b", "q": "x=y,z"},
		ReadOnly:         true,
		TestDriver:       "test-driver.yaml",
		NodeName:         "laptop",
		Admission:        admission.Options{WebhookServices: []string{"ns/svc=127.0.0.1:8443"}, As: "alice", AsGroups: []string{"devs"}, WebhookDryRun: true},
		Apiserver:        controlplane.Options{Enabled: true, DriverKubeconfig: "/tmp/ss/driver.kubeconfig", DriverServiceAccount: "kube-system/sscd", DriverWait: 2 * time.Minute},
	}
	got := o.RerunHint("lifecycle/ephemeral")
	want := `csi-kubelet-sim conformance --endpoint /tmp/ss/csi.sock -f deploy/ -f app.yaml -R --testdriver test-driver.yaml ` +
		`--volume-handle 'vol 1' --volume-attributes list=a,b --volume-attributes '"q=x=y,z"' --volume-attributes secretProviderClass=e2e-foo --read-only ` +
		`--node-name laptop --kubelet-version 1.33 --feature-gates SELinuxMount=true --timeout 30s ` +
		`--apiserver --driver-kubeconfig /tmp/ss/driver.kubeconfig --driver-service-account kube-system/sscd --driver-wait 2m0s ` +
		`--webhook-service ns/svc=127.0.0.1:8443 --as alice --as-group devs --webhook-dry-run ` +
		`--focus '^lifecycle/ephemeral$' -v`
	if got != want {
		t.Errorf("rerun hint:\n got %s\nwant %s", got, want)
	}

	// Defaults stay out of the line: the node name that is the host's,
	// the default timeout and driver wait.
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	d := &ConformanceOptions{
		EndpointFlag: EndpointFlag{Endpoint: "/run/csi.sock"},
		TimeoutFlag:  TimeoutFlag{Timeout: node.DefaultTimeout},
		Filenames:    []string{"d.yaml"},
		NodeName:     host,
		Apiserver:    controlplane.Options{DriverWait: time.Minute},
	}
	if got := d.RerunHint("timing/half-timeout"); got != `csi-kubelet-sim conformance --endpoint /run/csi.sock -f d.yaml --focus '^timing/half-timeout$' -v` {
		t.Errorf("rerun hint with the defaults: %s", got)
	}
	if strings.Contains(d.RerunHint("x"), "--apiserver") {
		t.Error("--apiserver without it")
	}
}
