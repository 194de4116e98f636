package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/mocklog"
)

const (
	mockDriver = "io.kubernetes.storage.mock" // the mock's default --name
	mockNodeID = "mock-node-id"
)

// Access modes as numbers, from the CSI spec's enum (csi.proto), as the mock
// logs them.
var (
	modeSNW  = float64(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)        // 1
	modeMNMW = float64(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)   // 5
	modeSNSW = float64(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER) // 6
	modeSNMW = float64(csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER)  // 7
)

// obj is a JSON object in the shape the mock logs (encoding/json over the Go
// CSI structs: snake_case, oneofs by Go field name, zero values omitted).
type obj = map[string]any

func mountCap(mount obj, mode float64) obj {
	return obj{"AccessType": obj{"Mount": mount}, "access_mode": obj{"mode": mode}}
}

// wantCall is one expected request at the mock.
type wantCall struct {
	method string
	req    obj
}

func ngc() wantCall { return wantCall{"NodeGetCapabilities", obj{}} }

// registration is docs/kubelet.md §13: the registrar's GetPluginInfo, then the
// kubelet's NodeGetInfo {} (docs/kubelet.md §21.2).
func registration() []wantCall {
	return []wantCall{{"GetPluginInfo", obj{}}, {"NodeGetInfo", obj{}}}
}

// podInfo is docs/kubelet.md §3: exactly five keys when podInfoOnMount is true.
func podInfo(name, ns, uid, sa string, ephemeral bool) obj {
	return obj{
		"csi.storage.k8s.io/pod.name":            name,
		"csi.storage.k8s.io/pod.namespace":       ns,
		"csi.storage.k8s.io/pod.uid":             uid,
		"csi.storage.k8s.io/serviceAccount.name": sa,
		"csi.storage.k8s.io/ephemeral":           fmt.Sprint(ephemeral),
	}
}

func merge(ms ...obj) obj {
	out := obj{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// mockCase is one run of the simulator against a fresh mock driver.
type mockCase struct {
	name      string
	mockFlags []string
	manifests func(root string) string
	want      func(root string) []wantCall
}

const mockPodUID = "7e57ab1e-0000-4000-8000-00000000c0de"

// pvManifests renders a PV bound to claim "data", the claim, and a pod "db"
// in namespace default using it. pvSpecExtra is inserted (pre-indented) in
// the PV's spec, csiExtra in its spec.csi; claimRO is the pod's claim readOnly;
// extraDocs (Secrets, VolumeAttachments) come after the CSIDriver.
func pvManifests(csidriver, pvName, handle, accessModes, pvSpecExtra, csiExtra string, claimRO bool, extraDocs ...string) string {
	docs := []string{}
	if csidriver != "" {
		docs = append(docs, csidriver)
	}
	docs = append(docs, extraDocs...)
	docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity:
    storage: 1Gi
  accessModes: %s
%s  claimRef:
    namespace: default
    name: data
  csi:
    driver: %s
    volumeHandle: %q
%s`, pvName, accessModes, pvSpecExtra, mockDriver, handle, csiExtra),
		fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: default
spec:
  accessModes: %s
  resources:
    requests:
      storage: 1Gi
  volumeName: %s
`, accessModes, pvName),
		fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: db
  namespace: default
  uid: %s
spec:
  nodeName: %s
  serviceAccountName: builder
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
        readOnly: %v
`, mockPodUID, simNode, claimRO))
	return strings.Join(docs, "---\n")
}

func csiDriverDoc(spec string) string {
	return fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: %s
spec:
%s`, mockDriver, spec)
}

// inlineManifests: a pod "web" in namespace "apps" with an inline volume
// "cache" (fsType xfs, readOnly, attributes that the kubelet's pod info must
// overwrite) and a publish secret resolved in the pod's namespace
// (docs/kubelet.md §2, §9): the Secret of the same name in "default" is a decoy.
func inlineManifests(csidriver string) string {
	return csidriver + `---
apiVersion: v1
kind: Secret
metadata:
  name: inline-creds
  namespace: apps
stringData:
  key: inline-secret-value
---
apiVersion: v1
kind: Secret
metadata:
  name: inline-creds
  namespace: default
stringData:
  key: wrong-namespace
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: apps
  uid: ` + mockPodUID + `
spec:
  serviceAccountName: web-sa
  containers:
    - name: app
      image: registry.k8s.io/pause:3.10
      volumeMounts:
        - name: cache
          mountPath: /cache
  volumes:
    - name: cache
      csi:
        driver: ` + mockDriver + `
        fsType: xfs
        readOnly: true
        volumeAttributes:
          size: 1Gi
          csi.storage.k8s.io/pod.name: user-value
          csi.storage.k8s.io/ephemeral: user-value
        nodePublishSecretRef:
          name: inline-creds
`
}

// pvWant is the expected call stream for one PV: registration, MountDevice
// (3 capability queries then NodeStage; 1 without STAGE_UNSTAGE), SetUp (3
// then NodePublish), TearDown (NodeUnpublish), UnmountDevice (1 then
// NodeUnstage; nothing without STAGE_UNSTAGE): docs/kubelet.md §11 and §21.1.
func pvWant(staged bool, stage, publish obj) []wantCall {
	w := registration()
	if staged {
		w = append(w, ngc(), ngc(), ngc(), wantCall{"NodeStageVolume", stage})
	} else {
		w = append(w, ngc())
	}
	w = append(w, ngc(), ngc(), ngc(), wantCall{"NodePublishVolume", publish})
	w = append(w, wantCall{"NodeUnpublishVolume", obj{"volume_id": publish["volume_id"], "target_path": publish["target_path"]}})
	if staged {
		w = append(w, ngc(), wantCall{"NodeUnstageVolume", obj{"volume_id": stage["volume_id"], "staging_target_path": stage["staging_target_path"]}})
	}
	return w
}

// inlineWant: registration, SetUp (2 capability queries, no STAGE query for
// inline, then NodePublish), TearDown; no MountDevice/UnmountDevice
// (docs/kubelet.md §2, §21.1).
func inlineWant(publish obj) []wantCall {
	w := registration()
	w = append(w, ngc(), ngc(), wantCall{"NodePublishVolume", publish})
	w = append(w, wantCall{"NodeUnpublishVolume", obj{"volume_id": publish["volume_id"], "target_path": publish["target_path"]}})
	return w
}

func mockCases() []mockCase {
	const noAttachPodInfo = "  attachRequired: false\n  podInfoOnMount: true\n"
	const noAttach = "  attachRequired: false\n  podInfoOnMount: false\n"

	inlinePublish := func(root string, mode float64) obj {
		return obj{
			"volume_id":         inlineHandle(mockPodUID, "cache"), // docs/kubelet.md §2
			"target_path":       targetPath(root, mockPodUID, "cache"),
			"volume_capability": mountCap(obj{"fs_type": "xfs"}, mode), // 2, 8: no mount flags
			"readonly":          true,                                  // 8: inline csi.readOnly
			"secrets":           obj{"key": "inline-secret-value"},     // 9: pod namespace
			"volume_context": merge(obj{"size": "1Gi"},
				podInfo("web", "apps", mockPodUID, "web-sa", true)), // 3: pod info overwrites
		}
	}

	attachWant := func(root string) []wantCall {
		pc := obj{"device": "/dev/mock3", "lun": "7"} // the VolumeAttachment's attachmentMetadata (docs/kubelet.md §10)
		st := stagingPath(root, mockDriver, "3")
		stage := obj{"volume_id": "3", "staging_target_path": st, "publish_context": pc,
			"volume_capability": mountCap(obj{}, modeSNW)} // RWOP without SNMW -> SINGLE_NODE_WRITER (8)
		publish := obj{"volume_id": "3", "staging_target_path": st, "publish_context": pc,
			"target_path":       targetPath(root, mockPodUID, "pv-attached"),
			"volume_capability": mountCap(obj{}, modeSNW)}
		return pvWant(true, stage, publish)
	}
	// The VolumeAttachment, named from docs/kubelet.md §10's formula.
	vaDoc := func() string {
		return fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata:
  name: %s
spec:
  attacher: %s
  nodeName: %s
  source:
    persistentVolumeName: pv-attached
status:
  attached: true
  attachmentMetadata:
    device: /dev/mock3
    lun: "7"
`, attachmentName("3", mockDriver, simNode), mockDriver, simNode)
	}

	snmwPV := func(accessModes string, mode float64) mockCase {
		return mockCase{
			mockFlags: []string{"--disable-attach", "--single-node-multi-writer"},
			manifests: func(string) string {
				return pvManifests(csiDriverDoc(noAttach), "pv-snmw", "2", accessModes, "", "", false)
			},
			want: func(root string) []wantCall {
				st := stagingPath(root, mockDriver, "2")
				c := mountCap(obj{}, mode)
				return pvWant(true,
					obj{"volume_id": "2", "staging_target_path": st, "volume_capability": c},
					obj{"volume_id": "2", "staging_target_path": st, "target_path": targetPath(root, mockPodUID, "pv-snmw"), "volume_capability": c})
			},
		}
	}

	cases := []mockCase{
		{
			// Attach left on: the mock would refuse NodePublish without
			// publish_context["device"] unless the volume is ephemeral.
			name: "inline-podinfo",
			manifests: func(string) string {
				return inlineManifests(csiDriverDoc(noAttachPodInfo + "  volumeLifecycleModes: [Ephemeral]\n"))
			},
			want: func(root string) []wantCall { return inlineWant(inlinePublish(root, modeSNW)) },
		},
		{
			name:      "pv-staged-no-attach",
			mockFlags: []string{"--disable-attach"},
			manifests: func(string) string {
				return pvManifests(csiDriverDoc(noAttachPodInfo), "pv-staged", "1", "[ReadWriteMany, ReadWriteOnce]",
					"  mountOptions: [noatime, nodiratime]\n",
					"    fsType: ext4\n    readOnly: true\n    volumeAttributes:\n      tier: fast\n      csi.storage.k8s.io/pod.name: user-value\n",
					true)
			},
			want: func(root string) []wantCall {
				st := stagingPath(root, mockDriver, "1")
				// docs/kubelet.md §8: first access mode only (RWX -> MULTI_NODE_MULTI_WRITER),
				// mount flags = PV mountOptions; readonly from the claim source.
				c := mountCap(obj{"fs_type": "ext4", "mount_flags": []any{"noatime", "nodiratime"}}, modeMNMW)
				// docs/kubelet.md §3: NodeStage gets only the PV's attributes; NodePublish
				// adds pod info (ephemeral "false"), overwriting the user's pod.name.
				attrs := obj{"tier": "fast", "csi.storage.k8s.io/pod.name": "user-value"}
				return pvWant(true,
					obj{"volume_id": "1", "staging_target_path": st, "volume_capability": c, "volume_context": attrs},
					obj{"volume_id": "1", "staging_target_path": st, "target_path": targetPath(root, mockPodUID, "pv-staged"),
						"volume_capability": c, "readonly": true,
						"volume_context": merge(attrs, podInfo("db", "default", mockPodUID, "builder", false))})
			},
		},
		{
			name:      "pv-no-stage",
			mockFlags: []string{"--disable-attach", "--disable-node-stage"},
			manifests: func(string) string {
				return pvManifests(csiDriverDoc(noAttachPodInfo), "pv-nostage", "2", "[ReadWriteOnce]", "", "", false)
			},
			want: func(root string) []wantCall {
				// docs/kubelet.md §1.3: no staging_target_path without STAGE_UNSTAGE;
				// 3: pod info with ephemeral "false"; 8: mount {} with no fsType.
				return pvWant(false, nil, obj{"volume_id": "2", "target_path": targetPath(root, mockPodUID, "pv-nostage"),
					"volume_capability": mountCap(obj{}, modeSNW),
					"volume_context":    podInfo("db", "default", mockPodUID, "builder", false)})
			},
		},
		{
			name: "pv-attach",
			manifests: func(string) string {
				return pvManifests(csiDriverDoc("  attachRequired: true\n"), "pv-attached", "3", "[ReadWriteOncePod]", "", "", false, vaDoc())
			},
			want: attachWant,
		},
		{
			// docs/kubelet.md §10 / §21.11: no CSIDriver object means attach is
			// required (and no pod info).
			name: "pv-attach-no-csidriver",
			manifests: func(string) string {
				return pvManifests("", "pv-attached", "3", "[ReadWriteOncePod]", "", "", false, vaDoc())
			},
			want: attachWant,
		},
		{
			// docs/kubelet.md §3: podInfoOnMount false, so the attributes go as they are.
			name:      "pv-no-podinfo",
			mockFlags: []string{"--disable-attach"},
			manifests: func(string) string {
				return pvManifests(csiDriverDoc(noAttach), "pv-plain", "3", "[ReadWriteOnce]", "",
					"    volumeAttributes:\n      csi.storage.k8s.io/pod.name: user-value\n", false)
			},
			want: func(root string) []wantCall {
				st := stagingPath(root, mockDriver, "3")
				c := mountCap(obj{}, modeSNW)
				attrs := obj{"csi.storage.k8s.io/pod.name": "user-value"}
				return pvWant(true,
					obj{"volume_id": "3", "staging_target_path": st, "volume_capability": c, "volume_context": attrs},
					obj{"volume_id": "3", "staging_target_path": st, "target_path": targetPath(root, mockPodUID, "pv-plain"),
						"volume_capability": c, "volume_context": attrs})
			},
		},
		{
			name:      "pv-secrets",
			mockFlags: []string{"--disable-attach"},
			manifests: func(string) string {
				secrets := `apiVersion: v1
kind: Secret
metadata:
  name: stage-creds
  namespace: storage
stringData:
  username: admin
  password: stage-pass
---
apiVersion: v1
kind: Secret
metadata:
  name: publish-creds
  namespace: storage
data:
  token: ` + base64.StdEncoding.EncodeToString([]byte("publish-pass")) + "\n"
				return pvManifests(csiDriverDoc(noAttach), "pv-secure", "1", "[ReadWriteOnce]", "",
					"    nodeStageSecretRef:\n      name: stage-creds\n      namespace: storage\n    nodePublishSecretRef:\n      name: publish-creds\n      namespace: storage\n",
					false, secrets)
			},
			want: func(root string) []wantCall {
				st := stagingPath(root, mockDriver, "1")
				c := mountCap(obj{}, modeSNW)
				// docs/kubelet.md §9: Secret.data as strings; stage secrets to NodeStage, publish to NodePublish.
				return pvWant(true,
					obj{"volume_id": "1", "staging_target_path": st, "volume_capability": c,
						"secrets": obj{"username": "admin", "password": "stage-pass"}},
					obj{"volume_id": "1", "staging_target_path": st, "target_path": targetPath(root, mockPodUID, "pv-secure"),
						"volume_capability": c, "secrets": obj{"token": "publish-pass"}})
			},
		},
	}
	// docs/kubelet.md §8: with SINGLE_NODE_MULTI_WRITER, RWO -> SINGLE_NODE_MULTI_WRITER
	// and RWOP -> SINGLE_NODE_SINGLE_WRITER; inline volumes are RWO (2).
	rwo := snmwPV("[ReadWriteOnce]", modeSNMW)
	rwo.name = "snmw-rwo"
	rwop := snmwPV("[ReadWriteOncePod]", modeSNSW)
	rwop.name = "snmw-rwop"
	cases = append(cases, rwo, rwop, mockCase{
		name:      "snmw-inline",
		mockFlags: []string{"--disable-attach", "--single-node-multi-writer"},
		manifests: func(string) string {
			return inlineManifests(csiDriverDoc(noAttachPodInfo + "  volumeLifecycleModes: [Ephemeral]\n"))
		},
		want: func(root string) []wantCall { return inlineWant(inlinePublish(root, modeSNMW)) },
	})
	return cases
}

// mockCalls stops the mock (so its log is complete) and parses the log.
func mockCalls(t *testing.T, d *driverProc) []mocklog.Call {
	t.Helper()
	d.Stop()
	f, err := os.Open(d.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cs, err := mocklog.Parse(f)
	if err != nil {
		t.Fatalf("mock log: %v", err)
	}
	return cs
}

func mockMethods(cs []mocklog.Call) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Method)
	}
	return out
}

// TestMockDriverRequests checks, from the mock driver's own log of what it
// received, every request field by field against docs/kubelet.md.
func TestMockDriverRequests(t *testing.T) {
	for _, tc := range mockCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			mock := startMock(t, work, tc.mockFlags...)
			root := filepath.Join(work, "root")
			mf := writeFile(t, work, "manifests.yaml", tc.manifests(root))

			r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+mock.Sock, "--root-dir", root,
				"--node-name", simNode, "-o", "json")
			got := mockCalls(t, mock)
			if r.Code != 0 {
				t.Errorf("exit %d, want 0\n%s\nmock log:\n%s", r.Code, r, readFile(mock.Log))
			}
			assertNothingLeft(t, root, work)

			want := tc.want(root)
			var wantM []string
			for _, w := range want {
				wantM = append(wantM, w.method)
			}
			if gm := mockMethods(got); !reflect.DeepEqual(gm, wantM) {
				t.Errorf("methods received, in order:\n got %v\nwant %v", gm, wantM)
			}
			for i := 0; i < len(got) && i < len(want); i++ {
				if got[i].Method != want[i].method {
					continue
				}
				if !got[i].OK() {
					t.Errorf("call %d %s failed at the mock: %s", i+1, got[i].Method, got[i].Error)
				}
				if ok, diff := jsonEqual(got[i].Request, want[i].req); !ok {
					t.Errorf("call %d %s request:\n%s", i+1, got[i].Method, diff)
				}
			}
		})
	}
}
