package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/mocklog"
)

// oneKubeletDriver is a driver of inline volumes with pod info and tokens
// in volume_context, so that `run` and conformance's tokens scenario send
// the same kind of NodePublishVolume to the mock.
const oneKubeletDriver = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: io.kubernetes.storage.mock
spec:
  attachRequired: false
  podInfoOnMount: true
  volumeLifecycleModes: [Ephemeral]
  tokenRequests:
    - audience: vault
`

const oneKubeletPod = `apiVersion: v1
kind: Pod
metadata:
  name: app
  namespace: default
spec:
  containers:
    - name: app
      image: registry.k8s.io/pause:3.10
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      csi:
        driver: io.kubernetes.storage.mock
`

// TestOneKubeletRunAndConformance runs the same pod through `run` and
// through conformance's tokens scenario, at kubelet 1.30 with and without
// ServiceAccountTokenJTI, and compares what the mock driver received: the
// same capability, the same volume_context keys, and tokens with the same
// claims (no jti with the gate off). Both commands drive node.Kubelet and
// one token source, so they cannot disagree.
func TestOneKubeletRunAndConformance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gates string
		jti   bool
	}{{"jti-off", "ServiceAccountTokenJTI=false", false}, {"jti-default", "", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			drvFile := writeFile(t, work, "csidriver.yaml", oneKubeletDriver)
			flags := []string{"--kubelet-version", "1.30", "--feature-gates", tc.gates}

			manifests := writeFile(t, work, "manifests.yaml", oneKubeletManifests)
			runMock := startMock(t, mkdir(t, work+"/run"))
			r := runSim(t, append(tokRunArgs(manifests, runMock.Sock, work+"/run-root"), flags...)...)
			wantCode(t, r, 0)
			runPub := onePublish(t, readMockLog(t, runMock), readFile(runMock.Log))

			confMock := startMock(t, mkdir(t, work+"/conf"))
			runConformance(t, work+"/conf", confMock.Sock, append([]string{"-f", drvFile, "--focus", "^tokens/volume-context$"}, flags...)...)
			confPubs := mocklog.Filter(readMockLog(t, confMock), "NodePublishVolume")
			if len(confPubs) == 0 {
				t.Fatalf("conformance sent no NodePublishVolume; mock log:\n%s", readFile(confMock.Log))
			}
			confPub := confPubs[0]

			if a, b := runPub.Get("volume_capability"), confPub.Get("volume_capability"); !reflect.DeepEqual(a, b) {
				t.Errorf("volume_capability: run %v, conformance %v", a, b)
			}
			runCtx, confCtx := strMap(t, runPub.Get("volume_context")), strMap(t, confPub.Get("volume_context"))
			if a, b := sortedKeysOf(runCtx), sortedKeysOf(confCtx); !slices.Equal(a, b) {
				t.Errorf("volume_context keys: run %v, conformance %v", a, b)
			}
			for label, ctx := range map[string]map[string]string{"run": runCtx, "conformance": confCtx} {
				claims := tokenClaimNames(t, ctx["csi.storage.k8s.io/serviceAccount.tokens"])
				if got := slices.Contains(claims, "jti"); got != tc.jti {
					t.Errorf("%s: token claims %v: jti present %t, want %t (gates %q)", label, claims, got, tc.jti, tc.gates)
				}
			}
		})
	}
}

// oneKubeletManifests are the run side's input: the same CSIDriver.
var oneKubeletManifests = oneKubeletDriver + "---\n" + oneKubeletPod

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tokenClaimNames decodes the vault token of a serviceAccount.tokens value
// and returns its claim names, sorted.
func tokenClaimNames(t *testing.T, tokens string) []string {
	t.Helper()
	var m map[string]struct{ Token string }
	if err := json.Unmarshal([]byte(tokens), &m); err != nil {
		t.Fatalf("serviceAccount.tokens %q: %v", tokens, err)
	}
	parts := strings.Split(m["vault"].Token, ".")
	if len(parts) != 3 {
		t.Fatalf("the vault token is not a JWT: %q", m["vault"].Token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]json.RawMessage
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return sortedKeysOf(claims)
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
