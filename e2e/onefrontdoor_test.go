package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/mocklog"
)

// frontDoorDriver: persistent volumes with pod info, no attach, so that
// conformance's lifecycle/persistent scenario and `run` mount the same
// kind of volume.
const frontDoorDriver = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: io.kubernetes.storage.mock
spec:
  attachRequired: false
  podInfoOnMount: true
  volumeLifecycleModes: [Persistent]
`

// frontDoorHandle is the pre-provisioned volume both commands mount.
const frontDoorHandle = "1" // one of the volumes the mock starts with

// frontDoorManifests are, for `run`, the objects conformance builds for
// its lifecycle/persistent scenario: the same PV, claim and pod, the pod
// with conformance's UID for the scenario.
func frontDoorManifests() string {
	s := sha256.Sum256([]byte("csi-kubelet-sim conformance lifecycle/persistent"))
	uid := fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
	return frontDoorDriver + fmt.Sprintf(`---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: conformance-pv
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  volumeMode: Filesystem
  claimRef: {namespace: default, name: conformance-claim}
  csi:
    driver: io.kubernetes.storage.mock
    volumeHandle: %q
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: conformance-claim
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  volumeMode: Filesystem
  resources: {requests: {storage: 1Gi}}
  volumeName: conformance-pv
---
apiVersion: v1
kind: Pod
metadata:
  name: conformance-lifecycle-persistent
  namespace: default
  uid: %s
spec:
  nodeName: %s
  serviceAccountName: default
  containers:
    - name: app
      image: registry.k8s.io/pause:3.10
      volumeMounts: [{name: data, mountPath: /data0}]
  volumes:
    - name: data
      persistentVolumeClaim: {claimName: conformance-claim}
`, frontDoorHandle, uid, simNode)
}

// TestOneFrontDoor runs conformance's lifecycle/persistent scenario and
// the same pod through `run`, each against its own mock driver, and
// compares what the drivers received from the first NodeStageVolume on:
// the same calls in the same order, with the same requests once each
// command's root dir is taken out. Conformance maps the scenario to a
// plan of the kubelet's Run, the one `run` goes through (issue 17).
func TestOneFrontDoor(t *testing.T) {
	work := workDir(t)
	drvFile := writeFile(t, work, "csidriver.yaml", frontDoorDriver)
	manifests := writeFile(t, work, "manifests.yaml", frontDoorManifests())

	runMock := startMock(t, mkdir(t, work+"/run"), "--disable-attach")
	runRoot := filepath.Join(work, "run-root")
	r := runSim(t, "run", "-f", manifests, "--endpoint", "unix://"+runMock.Sock, "--root-dir", runRoot, "--node-name", simNode, "-o", "json")
	wantCode(t, r, 0)

	confMock := startMock(t, mkdir(t, work+"/conf"), "--disable-attach")
	conf := runConformance(t, work+"/conf", confMock.Sock, "-f", drvFile, "--focus", "^lifecycle/persistent$", "--volume-handle", frontDoorHandle)
	wantCode(t, conf.sim, 0)
	// The scenario's kubelet root dir is its own, inside --root-dir.
	confRoot := filepath.Join(work, "conf", "root", "01-lifecycle-persistent")

	runCalls := fromFirstStage(t, readMockLog(t, runMock), runRoot)
	confCalls := fromFirstStage(t, readMockLog(t, confMock), confRoot)
	if len(runCalls) == 0 {
		t.Fatalf("run: no NodeStageVolume at the mock\n%s", readFile(runMock.Log))
	}
	for _, m := range []string{"NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"} {
		if !slices.ContainsFunc(runCalls, func(c string) bool { return strings.HasPrefix(c, m+" ") }) {
			t.Errorf("run: no %s from the first NodeStageVolume on: %q", m, runCalls)
		}
	}
	if !slices.Equal(runCalls, confCalls) {
		t.Errorf("the drivers received different calls from the first NodeStageVolume on:\nrun:\n  %s\nconformance:\n  %s",
			strings.Join(runCalls, "\n  "), strings.Join(confCalls, "\n  "))
	}
}

// fromFirstStage renders each call from the first NodeStageVolume on as
// its method and request, with root written as <root>.
func fromFirstStage(t *testing.T, calls []mocklog.Call, root string) []string {
	t.Helper()
	i := slices.IndexFunc(calls, func(c mocklog.Call) bool { return c.Method == "NodeStageVolume" })
	if i < 0 {
		return nil
	}
	var out []string
	for _, c := range calls[i:] {
		req, err := json.Marshal(c.Request)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Method+" "+strings.ReplaceAll(string(req), root, "<root>"))
	}
	return out
}
