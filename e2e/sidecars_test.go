package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

// The claim's UID is fixed, so the volume's name is known:
// pvc-<claim UID> (docs/kubelet.md §22).
const (
	claimUID = "0b5e7a1c-2222-4a2b-8c3d-5e6f7a8b9c0d"
	claimPV  = "pvc-" + claimUID
)

// classManifests is a StorageClass (extra class fields pre-indented at
// the top level), a claim "data" with UID claimUID, a pod using it, and
// the extra documents.
func classManifests(provisioner, classExtra, size string, extra ...string) string {
	docs := append([]string{fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: %s
%s`, provisioner, classExtra),
		fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: default
  uid: %s
spec:
  storageClassName: fast
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: %s
`, claimUID, size),
		`apiVersion: v1
kind: Pod
metadata:
  name: db
  namespace: default
  uid: 9a3c3c6e-2222-4d2b-9c51-0e2f8d1a7b05
spec:
  containers:
    - name: db
      image: registry.k8s.io/pause:3.10
      volumeMounts:
        - name: data
          mountPath: /data
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: data
`}, extra...)
	return strings.Join(docs, "---\n")
}

// secretDoc is a Secret with one key.
func secretDoc(name, key, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: default\nstringData:\n  %s: %s\n", name, key, value)
}

// callOf returns the first call of a method.
func callOf(t *testing.T, cs []traceLine, method string) traceLine {
	t.Helper()
	for _, c := range cs {
		if c.Method == method {
			return c
		}
	}
	t.Fatalf("no %s call among %v", method, methods(cs))
	return traceLine{}
}

// provisionedPV is the PV the run printed (-o json).
func provisionedPV(t *testing.T, lines []traceLine) map[string]any {
	t.Helper()
	for _, l := range lines {
		if l.Kind == "persistentvolume" {
			var o struct {
				PV map[string]any `json:"pv"`
			}
			if err := json.Unmarshal([]byte(l.Raw), &o); err != nil {
				t.Fatal(err)
			}
			return o.PV
		}
	}
	t.Fatalf("no persistentvolume line in the trace")
	return nil
}

var identityRE = regexp.MustCompile(`^[0-9]+-[0-9]+-` + regexp.QuoteMeta(refDriverName) + `$`)

// TestProvisionAndAttachRefDriver: an Immediate class with topology,
// parameters, mount options and secret templates, against the reference
// driver with PUBLISH_UNPUBLISH_VOLUME. CreateVolume, the PV,
// ControllerPublishVolume, publish_context in NodeStageVolume, then
// ControllerUnpublishVolume and DeleteVolume with the deleter secrets are
// checked field by field (docs/kubelet.md §22, §23).
func TestProvisionAndAttachRefDriver(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--stage-unstage", "--controller-publish", "--topology", "topology.ref/zone=z1")
	root := filepath.Join(work, "root")
	class := `parameters:
  tier: fast
  csi.storage.k8s.io/fstype: ext4
  csi.storage.k8s.io/provisioner-secret-name: ${pvc.name}-prov
  csi.storage.k8s.io/provisioner-secret-namespace: ${pvc.namespace}
  csi.storage.k8s.io/node-stage-secret-name: stage-${pv.name}
  csi.storage.k8s.io/node-stage-secret-namespace: default
mountOptions: [noatime]
`
	mf := writeFile(t, work, "m.yaml", classManifests(refDriverName, class, "1Gi",
		secretDoc("data-prov", "token", "prov-secret"), secretDoc("stage-"+claimPV, "key", "stage-secret")))
	r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"-o", "json", "--show-secrets", "--extra-create-metadata")
	wantCode(t, r, 0)
	lines := parseTrace(t, r)
	cs := calls(lines)

	wantOrder := []string{"GetPluginInfo", "NodeGetInfo", "GetPluginInfo", "GetPluginCapabilities", "ControllerGetCapabilities", "CreateVolume", "ControllerPublishVolume"}
	if got := methods(cs); len(got) < len(wantOrder) || strings.Join(got[:len(wantOrder)], ",") != strings.Join(wantOrder, ",") {
		t.Errorf("calls start %v, want %v", got, wantOrder)
	}
	if got := methods(cs); strings.Join(got[len(got)-3:], ",") != "NodeUnstageVolume,ControllerUnpublishVolume,DeleteVolume" {
		t.Errorf("calls end %v, want NodeUnstageVolume, ControllerUnpublishVolume, DeleteVolume", got)
	}
	topo := []any{map[string]any{"segments": map[string]any{"topology.ref/zone": "z1"}}}
	wantCreate := map[string]any{
		"name":           claimPV,
		"capacity_range": map[string]any{"required_bytes": "1073741824"},
		"volume_capabilities": []any{map[string]any{
			"access_mode": map[string]any{"mode": "SINGLE_NODE_WRITER"},
			"mount":       map[string]any{"fs_type": "ext4", "mount_flags": []any{"noatime"}},
		}},
		"parameters": map[string]any{"tier": "fast", "csi.storage.k8s.io/pvc/name": "data",
			"csi.storage.k8s.io/pvc/namespace": "default", "csi.storage.k8s.io/pv/name": claimPV},
		"secrets":                    map[string]any{"token": "prov-secret"},
		"accessibility_requirements": map[string]any{"requisite": topo, "preferred": topo},
	}
	if ok, diff := jsonEqual(callOf(t, cs, "CreateVolume").Request, wantCreate); !ok {
		t.Errorf("CreateVolume request:\n%s", diff)
	}

	pv := provisionedPV(t, lines)
	pvCSI := pv["spec"].(map[string]any)["csi"].(map[string]any)
	id, _ := pvCSI["volumeAttributes"].(map[string]any)["storage.kubernetes.io/csiProvisionerIdentity"].(string)
	if !identityRE.MatchString(id) {
		t.Errorf("PV volumeAttributes csiProvisionerIdentity %q, want <ms>-<n>-%s", id, refDriverName)
	}
	wantPV := map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{
			"name":       claimPV,
			"finalizers": []any{"external-provisioner.volume.kubernetes.io/finalizer"},
			"annotations": map[string]any{"pv.kubernetes.io/provisioned-by": refDriverName,
				"volume.kubernetes.io/provisioner-deletion-secret-name":      "data-prov",
				"volume.kubernetes.io/provisioner-deletion-secret-namespace": "default"},
		},
		"spec": map[string]any{
			"accessModes":  []any{"ReadWriteOnce"},
			"capacity":     map[string]any{"storage": "1Gi"},
			"mountOptions": []any{"noatime"},
			"claimRef": map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
				"namespace": "default", "name": "data", "uid": claimUID},
			"csi": map[string]any{
				"driver": refDriverName, "volumeHandle": claimPV, "fsType": "ext4",
				"volumeAttributes":   map[string]any{"storage.kubernetes.io/csiProvisionerIdentity": id},
				"nodeStageSecretRef": map[string]any{"name": "stage-" + claimPV, "namespace": "default"},
			},
			"nodeAffinity": map[string]any{"required": map[string]any{"nodeSelectorTerms": []any{
				map[string]any{"matchExpressions": []any{map[string]any{"key": "topology.ref/zone", "operator": "In", "values": []any{"z1"}}}},
			}}},
			"persistentVolumeReclaimPolicy": "Delete",
			"storageClassName":              "fast",
			"volumeMode":                    "Filesystem",
		},
		"status": map[string]any{"phase": "Bound"},
	}
	if ok, diff := jsonEqual(pv, wantPV); !ok {
		t.Errorf("PV:\n%s", diff)
	}

	wantPublish := map[string]any{
		"volume_id": claimPV, "node_id": "ref-node-id",
		"volume_capability": map[string]any{"access_mode": map[string]any{"mode": "SINGLE_NODE_WRITER"},
			"mount": map[string]any{"fs_type": "ext4", "mount_flags": []any{"noatime"}}},
		"volume_context": map[string]any{"storage.kubernetes.io/csiProvisionerIdentity": id},
	}
	if ok, diff := jsonEqual(callOf(t, cs, "ControllerPublishVolume").Request, wantPublish); !ok {
		t.Errorf("ControllerPublishVolume request:\n%s", diff)
	}
	pc := map[string]any{"device": "/dev/ref/" + claimPV, "node": "ref-node-id"}
	stage := callOf(t, cs, "NodeStageVolume").Request
	if ok, diff := jsonEqual(stage["publish_context"], pc); !ok {
		t.Errorf("NodeStageVolume publish_context:\n%s", diff)
	}
	if ok, diff := jsonEqual(stage["secrets"], map[string]any{"key": "stage-secret"}); !ok {
		t.Errorf("NodeStageVolume secrets:\n%s", diff)
	}
	if ok, diff := jsonEqual(callOf(t, cs, "NodePublishVolume").Request["publish_context"], pc); !ok {
		t.Errorf("NodePublishVolume publish_context:\n%s", diff)
	}
	if ok, diff := jsonEqual(callOf(t, cs, "ControllerUnpublishVolume").Request, map[string]any{"volume_id": claimPV, "node_id": "ref-node-id"}); !ok {
		t.Errorf("ControllerUnpublishVolume request:\n%s", diff)
	}
	if ok, diff := jsonEqual(callOf(t, cs, "DeleteVolume").Request, map[string]any{"volume_id": claimPV, "secrets": map[string]any{"token": "prov-secret"}}); !ok {
		t.Errorf("DeleteVolume request:\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(work, "refdata", claimPV)); !os.IsNotExist(err) {
		t.Errorf("the volume's backing directory is still on the driver (stat: %v)", err)
	}
	assertNothingLeft(t, root, work)
}

// TestProvisionWaitForFirstConsumer: the class's allowedTopologies are
// the requisite topologies, sorted; the preferred ones start at the
// selected node's (docs/kubelet.md §22). Without PUBLISH_UNPUBLISH_VOLUME
// the volume is attached without a call (§23).
func TestProvisionWaitForFirstConsumer(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--stage-unstage", "--topology", "topology.ref/zone=z1")
	root := filepath.Join(work, "root")
	class := `volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
allowedTopologies:
  - matchLabelExpressions:
      - key: topology.ref/zone
        values: [z1, z0]
`
	mf := writeFile(t, work, "m.yaml", classManifests(refDriverName, class, "64Mi"))
	r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "-o", "json")
	wantCode(t, r, 0)
	cs := calls(parseTrace(t, r))
	z := func(v string) any { return map[string]any{"segments": map[string]any{"topology.ref/zone": v}} }
	want := map[string]any{"requisite": []any{z("z0"), z("z1")}, "preferred": []any{z("z1"), z("z0")}}
	if ok, diff := jsonEqual(callOf(t, cs, "CreateVolume").Request["accessibility_requirements"], want); !ok {
		t.Errorf("accessibility_requirements:\n%s", diff)
	}
	for _, m := range methods(cs) {
		if m == "ControllerPublishVolume" || m == "ControllerUnpublishVolume" {
			t.Errorf("%s called, but the driver has no PUBLISH_UNPUBLISH_VOLUME", m)
		}
	}
	if got := callOf(t, cs, "NodeStageVolume").Request["publish_context"]; got != nil {
		t.Errorf("publish_context %v, want none (attached without a call)", got)
	}
	callOf(t, cs, "DeleteVolume")
	assertNothingLeft(t, root, work)
}

// TestProvisionMockDriver: the Kubernetes mock driver, with topology and a
// WaitForFirstConsumer class, gets CreateVolume with the node's topology,
// ControllerPublishVolume (whose publish_context["device"] its
// NodeStageVolume needs), and DeleteVolume at the end, as its own log
// shows.
func TestProvisionMockDriver(t *testing.T) {
	work := workDir(t)
	mock := startMock(t, work, "--enable-topology")
	root := filepath.Join(work, "root")
	mf := writeFile(t, work, "m.yaml", classManifests(mockDriver, "volumeBindingMode: WaitForFirstConsumer\n", "1Gi"))
	r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+mock.Sock, "--root-dir", root, "--node-name", simNode, "-o", "json")
	got := mockCalls(t, mock)
	wantCode(t, r, 0)
	byMethod := map[string]map[string]any{}
	for _, c := range got {
		if !c.OK() {
			t.Errorf("%s failed at the mock: %s", c.Method, c.Error)
		}
		byMethod[c.Method] = c.Request
	}
	topo := []any{map[string]any{"segments": map[string]any{"io.kubernetes.storage.mock/node": "some-mock-node"}}}
	wantCreate := map[string]any{"name": claimPV, "capacity_range": map[string]any{"required_bytes": float64(1 << 30)},
		"volume_capabilities":        []any{map[string]any{"AccessType": map[string]any{"Mount": map[string]any{}}, "access_mode": map[string]any{"mode": float64(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}}},
		"accessibility_requirements": map[string]any{"requisite": topo, "preferred": topo}}
	if ok, diff := jsonEqual(byMethod["CreateVolume"], wantCreate); !ok {
		t.Errorf("CreateVolume at the mock:\n%s", diff)
	}
	lines := parseTrace(t, r)
	handle := callOf(t, calls(lines), "CreateVolume").Response["volume"].(map[string]any)["volume_id"].(string)
	// The PV's node affinity is the volume's accessible topology.
	wantAffinity := map[string]any{"required": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
		map[string]any{"key": "io.kubernetes.storage.mock/node", "operator": "In", "values": []any{"some-mock-node"}}}}}}}
	if ok, diff := jsonEqual(provisionedPV(t, lines)["spec"].(map[string]any)["nodeAffinity"], wantAffinity); !ok {
		t.Errorf("PV nodeAffinity:\n%s", diff)
	}
	if pub := byMethod["ControllerPublishVolume"]; pub["volume_id"] != handle || pub["node_id"] != mockNodeID {
		t.Errorf("ControllerPublishVolume at the mock: %v, want volume %s on node %s", pub, handle, mockNodeID)
	}
	if pc, _ := byMethod["NodeStageVolume"]["publish_context"].(map[string]any); pc["device"] != "/dev/mock" {
		t.Errorf("NodeStageVolume publish_context %v, want device /dev/mock", pc)
	}
	if ok, diff := jsonEqual(byMethod["DeleteVolume"], map[string]any{"volume_id": handle}); !ok {
		t.Errorf("DeleteVolume at the mock:\n%s", diff)
	}
	ms := mockMethods(got)
	if strings.Join(ms[len(ms)-3:], ",") != "NodeUnstageVolume,ControllerUnpublishVolume,DeleteVolume" {
		t.Errorf("mock calls end %v", ms)
	}
	assertNothingLeft(t, root, work)
}

// TestProvisionBadInput: each is a one-line error naming the claim, exit
// 2, before any volume is made; OutOfRange is the driver's (exit 1).
func TestProvisionBadInput(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--stage-unstage", "--max-volume-size", "1Gi")
	noCtrl := csifake.New(csifake.Config{Name: refDriverName, NodeID: "n", Capabilities: []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}})
	noCtrlSock := csifake.ServeTest(t, noCtrl)
	secretClass := "parameters:\n  csi.storage.k8s.io/provisioner-secret-name: creds\n  csi.storage.k8s.io/provisioner-secret-namespace: default\n"
	cases := []struct {
		name, manifests, sock string
		code                  int
		want                  []string
	}{
		{"other-provisioner", classManifests("other.csi.example.com", "", "1Gi"), drv.Sock, 2,
			[]string{"claim default/data", `StorageClass "fast" names provisioner "other.csi.example.com"`}},
		{"missing-provisioner-secret", classManifests(refDriverName, secretClass, "1Gi"), drv.Sock, 2,
			[]string{"claim default/data", `secrets "creds" not found`}},
		{"no-create-delete-volume", classManifests(refDriverName, "", "1Gi"), noCtrlSock, 2,
			[]string{"claim default/data", "does not offer CREATE_DELETE_VOLUME"}},
		{"out-of-range", classManifests(refDriverName, "", "2Gi"), drv.Sock, 1,
			[]string{"claim default/data", "OutOfRange", "exceed the largest volume"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(work, tc.name+"-root")
			mf := writeFile(t, filepath.Join(work, tc.name), "m.yaml", tc.manifests)
			r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+tc.sock, "--root-dir", root, "--node-name", simNode)
			wantCode(t, r, tc.code)
			oneLineError(t, r, tc.want...)
			assertNothingLeft(t, root, work)
		})
	}
}

// TestProvisionedVolumeDeletedAfterFailedStage: a driver that creates the
// volume and fails NodeStageVolume: exit 1, and the volume is deleted all
// the same; with --keep-volumes it stays and its handle is named.
func TestProvisionedVolumeDeletedAfterFailedStage(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--stage-unstage", "--fault", "NodeStageVolume=Internal")
	mf := writeFile(t, work, "m.yaml", classManifests(refDriverName, "", "1Gi"))
	root := filepath.Join(work, "root")
	r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "-o", "json")
	wantCode(t, r, 1)
	callOf(t, calls(parseTrace(t, r)), "DeleteVolume")
	if _, err := os.Stat(filepath.Join(work, "refdata", claimPV)); !os.IsNotExist(err) {
		t.Errorf("the volume is still on the driver after a failed NodeStage (stat: %v)", err)
	}
	assertNothingLeft(t, root, work)

	r = runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "--keep-volumes")
	wantCode(t, r, 1)
	if !strings.Contains(r.Stdout, "provisioned default/data -> "+claimPV+", handle "+claimPV+": kept") {
		t.Errorf("the kept volume's handle is not in the summary\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(work, "refdata", claimPV)); err != nil {
		t.Errorf("--keep-volumes: the volume is gone from the driver: %v", err)
	}
	assertNothingLeft(t, root, work)
}

// TestProvisionKilledThenCleanup: a run killed (-9) while its pod runs
// leaves a published, attached, provisioned volume; `cleanup` unstages it
// through the kubelet's recovery, then unpublishes and deletes it from the
// record (docs/kubelet.md §22).
func TestProvisionKilledThenCleanup(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--stage-unstage", "--controller-publish")
	mf := writeFile(t, work, "m.yaml", classManifests(refDriverName, "", "1Gi"))
	root := filepath.Join(work, "root")
	s := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "--hold", "forever")
	target := filepath.Join(root, "pods", "9a3c3c6e-2222-4d2b-9c51-0e2f8d1a7b05", "volumes", "kubernetes.io~csi", claimPV, "mount")
	waitMounted(t, target, 30*time.Second, s.exited)
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	if _, err := os.Stat(filepath.Join(work, "refdata", claimPV)); err != nil {
		t.Fatalf("the volume should exist after the kill: %v", err)
	}
	r := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode, "-o", "json")
	wantCode(t, r, 0)
	ms := methods(calls(parseTrace(t, r)))
	if n := len(ms); n < 2 || ms[n-2] != "ControllerUnpublishVolume" || ms[n-1] != "DeleteVolume" {
		t.Errorf("cleanup calls %v, want ... ControllerUnpublishVolume, DeleteVolume", ms)
	}
	if _, err := os.Stat(filepath.Join(work, "refdata", claimPV)); !os.IsNotExist(err) {
		t.Errorf("cleanup left the volume on the driver (stat: %v)", err)
	}
	if left, _ := filepath.Glob(filepath.Join(root, ".csi-kubelet-sim", "*")); len(left) > 0 {
		t.Errorf("cleanup left records: %v", left)
	}
	if ms := mountsUnder(root); len(ms) > 0 {
		t.Errorf("still mounted: %v", ms)
	}
}

// TestLoadProvisionsPerReplica: `load` copies a claim left to the
// provisioner for every replica, provisions each on its own and deletes
// them all; the report counts the calls.
func TestLoadProvisionsPerReplica(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--stage-unstage", "--controller-publish")
	mf := writeFile(t, work, "m.yaml", classManifests(refDriverName, "", "1Gi"))
	root := filepath.Join(work, "root")
	r := runSim(t, "load", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "--replicas", "2", "-o", "json")
	wantCode(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	var sum struct {
		Load struct {
			Methods []struct {
				Method string `json:"method"`
				Calls  int    `json:"calls"`
			} `json:"methods"`
		} `json:"load"`
		Provisioned []map[string]string `json:"provisioned"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, m := range sum.Load.Methods {
		counts[m.Method] = m.Calls
	}
	for _, m := range []string{"CreateVolume", "ControllerPublishVolume", "ControllerUnpublishVolume", "DeleteVolume"} {
		if counts[m] != 3 {
			t.Errorf("%s: %d calls in the report, want 3 (one per pod's claim)", m, counts[m])
		}
	}
	if len(sum.Provisioned) != 3 {
		t.Errorf("provisioned %v, want 3 volumes", sum.Provisioned)
	}
	for _, v := range sum.Provisioned {
		if v["state"] != "deleted" {
			t.Errorf("volume %v not deleted", v)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(work, "refdata")); len(entries) != 0 {
		t.Errorf("volumes left on the driver: %v", entries)
	}
	assertNothingLeft(t, root, work)
}

// TestRefusedDeleteVolume: a DeleteVolume the driver refuses is exit 1
// naming the handle left and the cleanup that deletes it; that cleanup
// does (docs/kubelet.md §22.4).
func TestRefusedDeleteVolume(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--stage-unstage", "--fault", "DeleteVolume=FailedPrecondition:1")
	mf := writeFile(t, work, "m.yaml", classManifests(refDriverName, "", "1Gi"))
	root := filepath.Join(work, "root")
	r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode)
	wantCode(t, r, 1)
	oneLineError(t, r, "DeleteVolume "+claimPV, "FailedPrecondition", "left on the driver: handle "+claimPV,
		"csi-kubelet-sim cleanup --root-dir "+root)
	if _, err := os.Stat(filepath.Join(work, "refdata", claimPV)); err != nil {
		t.Fatalf("the volume should still be on the driver: %v", err)
	}
	// A new run on the root dir is refused until cleanup has run.
	r = runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode)
	wantCode(t, r, 3)
	oneLineError(t, r, "csi-kubelet-sim cleanup --root-dir "+root)
	r = runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv.Sock, "--node-name", simNode)
	wantCode(t, r, 0)
	if _, err := os.Stat(filepath.Join(work, "refdata", claimPV)); !os.IsNotExist(err) {
		t.Errorf("cleanup left the volume on the driver (stat: %v)", err)
	}
	if left, _ := filepath.Glob(filepath.Join(root, ".csi-kubelet-sim", "*")); len(left) > 0 {
		t.Errorf("cleanup left records: %v", left)
	}
}

// TestControllerEndpoint: with --controller-endpoint the sidecars' calls
// go to the controller's socket, the kubelet's to the node's. Two
// reference drivers share one data dir, as a controller and a node plugin
// share their storage.
func TestControllerEndpoint(t *testing.T) {
	work := workDir(t)
	data := filepath.Join(work, "refdata")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(name string) *driverProc {
		sock := filepath.Join(work, name+".sock")
		return startDriver(t, refBin(t), sock, filepath.Join(work, name+".log"),
			"--endpoint", "unix://"+sock, "--data-dir", data, "--node-id", "ref-node-id", "--stage-unstage", "--controller-publish", "-v", "2")
	}
	nodeDrv, ctrlDrv := start("node"), start("controller")
	mf := writeFile(t, work, "m.yaml", classManifests(refDriverName, "", "1Gi"))
	root := filepath.Join(work, "root")
	r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+nodeDrv.Sock, "--controller-endpoint", "unix://"+ctrlDrv.Sock,
		"--root-dir", root, "--node-name", simNode)
	wantCode(t, r, 0)
	nodeDrv.Stop()
	ctrlDrv.Stop()
	nodeLog, ctrlLog := readFile(nodeDrv.Log), readFile(ctrlDrv.Log)
	for _, m := range []string{"CreateVolume", "ControllerPublishVolume", "ControllerUnpublishVolume", "DeleteVolume"} {
		if !strings.Contains(ctrlLog, "/csi.v1.Controller/"+m) {
			t.Errorf("%s did not reach the controller socket", m)
		}
		if strings.Contains(nodeLog, "/csi.v1.Controller/"+m) {
			t.Errorf("%s reached the node socket", m)
		}
	}
	if !strings.Contains(nodeLog, "/csi.v1.Node/NodeStageVolume") || strings.Contains(ctrlLog, "/csi.v1.Node/NodeStageVolume") {
		t.Errorf("NodeStageVolume should reach the node socket only")
	}
	assertNothingLeft(t, root, work)
}

// TestProvisionedVolumeSharedByTwoRuns: two runs of the provision sample
// (one claim UID, so one CreateVolume name) on two root dirs against one
// reference driver get one volume; the first to end keeps it for the other
// ("kept: in use by the run of root dir ..."), the second deletes it.
//
// Without staging: the two runs' kubelets are on one machine, and with a
// shared globalmount the first one's UnmountDevice would see the other's
// mounts (GetDeviceMountRefs), as a real kubelet would.
func TestProvisionedVolumeSharedByTwoRuns(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--stage-unstage=false")
	ep := "unix://" + drv.Sock
	rootB := filepath.Join(work, "root-b")
	b := startSim(t, "run", "-f", sample(t, "provision"), "--endpoint", ep, "--root-dir", rootB, "--node-name", simNode, "--hold", "forever", "-o", "json")
	waitOutput(t, b, "NodePublishVolume", 2*time.Minute)
	a := runSim(t, "run", "-f", sample(t, "provision"), "--endpoint", ep, "--root-dir", filepath.Join(work, "root-a"), "--node-name", simNode, "-o", "json")
	wantCode(t, a, 0)
	aCalls := calls(parseTrace(t, a))
	callOf(t, aCalls, "CreateVolume")
	for _, c := range aCalls {
		if c.Method == "DeleteVolume" {
			t.Errorf("the first run to end called DeleteVolume on the volume the other run has mounted: %v", c.Request)
		}
	}
	if !strings.Contains(a.Stdout, "kept: in use by the run of root dir "+rootB) {
		t.Errorf("the first run does not say whose run keeps the volume:\n%s", a.Stdout)
	}
	_ = b.cmd.Process.Signal(syscall.SIGINT)
	rb := b.wait(t, 2*time.Minute)
	callOf(t, calls(parseTrace(t, rb)), "DeleteVolume")
}
