package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

const badWebhookConfig = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: injector
webhooks:
  - name: injector
    admissionReviewVersions: [v2]
    sideEffects: Some
    timeoutSeconds: 60
    clientConfig:
      url: http://127.0.0.1:8443/inject
    rules:
      - operations: [CREATE]
        apiGroups: [""]
        apiVersions: [v1]
        resources: ["*", pods]
`

// TestValidateWebhookConfiguration: validate reports each field the API
// server refuses, with its path and message.
func TestValidateWebhookConfiguration(t *testing.T) {
	stdout, stderr, code := cli(t, badWebhookConfig, "validate", "-f", "-")
	if code != session.ExitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, session.ExitUsage, stderr)
	}
	for _, want := range []string{
		`webhooks[0].name: Invalid value: "injector": should be a domain with at least three segments separated by dots`,
		`webhooks[0].rules[0].resources: Invalid value: ["*","pods"]: if '*' is present, must not specify other resources without subresources`,
		`webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`,
		`webhooks[0].timeoutSeconds: Invalid value: 60: the timeout value must be between 1 and 30 seconds`,
		`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`,
		`webhooks[0].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("validate output lacks %q\n%s", want, stdout)
		}
	}
}

// TestAdmissionFlags: bad flags and an invalid configuration are usage
// errors, before any driver is involved.
func TestAdmissionFlags(t *testing.T) {
	cases := []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"--webhook-service", "webhooks/x"}, "", "want namespace/name[:port]=host:port"},
		{[]string{"--webhook-service", "x=127.0.0.1:80"}, "", "want namespace/name[:port]=host:port"},
		{[]string{"--webhook-service", "webhooks/x=127.0.0.1"}, "", "address without a port"},
		{[]string{"--as-group", "dev"}, "", "--as-group needs --as"},
		{nil, badWebhookConfig, "MutatingWebhookConfiguration injector is invalid"},
	}
	for _, tc := range cases {
		args := append([]string{"plan", "-f", "-", "--driver-name", "d.example.com"}, tc.args...)
		stdin := tc.stdin
		if stdin == "" {
			stdin = csiDriverYAML
		}
		_, stderr, code := cli(t, stdin, args...)
		if code != session.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: %s (exit %d), want exit 2 with %q", tc.args, stderr, code, tc.want)
		}
	}
}

// TestAdmissionHelperDies: a helper that dies without answering is the
// environment's failure (exit 3, naming the helper), not bad input: at its
// first request, or after judging and loading the configuration, in the
// middle of admitting the objects.
func TestAdmissionHelperDies(t *testing.T) {
	const config = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: injector
webhooks:
  - name: injector.example.com
    admissionReviewVersions: [v1]
    sideEffects: None
    clientConfig:
      url: https://127.0.0.1:8443/inject
    rules:
      - operations: [CREATE]
        apiGroups: [""]
        apiVersions: [v1]
        resources: [pods]
---
apiVersion: v1
kind: Pod
metadata:
  name: app
  uid: 9a3c3c6e-1111-4d2b-9c51-0e2f8d1a7b01
spec:
  containers: [{name: c, image: busybox}]
  volumes:
    - name: v
      csi: {driver: ref.csi.kubelet-sim.io}
`
	for _, tc := range []struct{ name, script string }{
		{"at once", "exit 1"},
		{"while admitting", `read l; echo '{"invalid":[[]]}'; read l; echo '{}'; exit 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "csi-kubelet-sim-admission")
			if err := os.WriteFile(script, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("CSI_KUBELET_SIM_ADMISSION", script)
			_, stderr, code := cli(t, config, "plan", "-f", "-", "--node-name", "n")
			if code != session.ExitEnvironment {
				t.Fatalf("exit %d, want %d\n%s", code, session.ExitEnvironment, stderr)
			}
			if !strings.Contains(stderr, "admission helper") {
				t.Errorf("the error does not name the admission helper: %s", stderr)
			}
		})
	}
}
