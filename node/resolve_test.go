package node

// How the kubelet resolves a pod's volumes: claims, skipped and unused
// volumes, generic ephemeral volumes.

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// Claims are resolved like the desired-state populator does; inputs the
// kubelet could not resolve are errors naming where the bad object is.
func TestResolveClaims(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		objects []string // written to claims.yaml
		want    []string // substrings of the error
	}{
		{
			name:    "claim without volumeName",
			objects: []string{noAttachDriver, strings.Replace(pvc1, "\n  volumeName: pv-1", "", 1), pod1},
			want:    []string{"claims.yaml: document 2: spec.volumeName:", "PVC default/data-1", `empty pvc.Spec.VolumeName ("")`},
		},
		{
			name:    "PV not found",
			objects: []string{noAttachDriver, pvcDoc("data-1", "pv-missing"), pod1},
			want:    []string{"claims.yaml: document 2: spec.volumeName: PersistentVolume \"pv-missing\" not found"},
		},
		{
			name:    "claim not found",
			objects: []string{noAttachDriver, pod1},
			want:    []string{"claims.yaml: document 2: spec.volumes[0] (data):", `persistentvolumeclaims "data-1" not found`},
		},
		{
			name:    "PV bound to another claim",
			objects: []string{noAttachDriver, pvDoc("pv-1", "vol-1", "someone-else"), pvc1, pod1},
			want:    []string{"claims.yaml: document 2: spec.claimRef: PV pv-1 is bound to default/someone-else, not to claim default/data-1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := dir + "/claims.yaml"
			if err := os.WriteFile(file, []byte(docs(tc.objects...)), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := (&manifests.Loader{}).Load([]string{file})
			if err != nil {
				t.Fatal(err)
			}
			drv := newFakeDriver()
			k := New(Config{RootDir: t.TempDir(), NodeName: testNode, Cluster: c, Conn: drv})
			_, err = k.vm.MountPod(context.Background(), c.Pods()[0], false)
			if err == nil {
				t.Fatal("MountPod succeeded")
			}
			var ie *manifests.InputError
			if !errors.As(err, &ie) {
				t.Errorf("error %T is not a *manifests.InputError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if len(drv.Calls()) != 0 {
				t.Errorf("driver called")
			}
		})
	}
}

// Volumes the kubelet would not mount through CSI are reported as skipped.
func TestSkippedVolumes(t *testing.T) {
	nfsPV := `apiVersion: v1
kind: PersistentVolume
metadata: {name: nfs-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  nfs: {server: nfs.example.com, path: /export}`
	e := newEnv(t, docs(noAttachDriver, nfsPV, pvcDoc("nfs", "nfs-pv"),
		podDoc("app-1", "pod-uid-1", "{name: cache, emptyDir: {}}", claimVol("shared", "nfs"))), newFakeDriver())
	res := e.mountOK("app-1")
	want := []csiplugin.SkippedVolume{{Name: "cache", Reason: "not a CSI volume"}, {Name: "shared", Reason: "PV nfs-pv is not a CSI volume"}}
	if !slices.Equal(res.Skipped, want) {
		t.Errorf("skipped = %+v, want %+v", res.Skipped, want)
	}
	if len(res.Volumes) != 0 || len(e.drv.Calls()) != 0 {
		t.Errorf("volumes = %+v, calls = %q; want none", res.Volumes, seq(e.drv.Calls()))
	}
}

// A volume no container names in volumeMounts or volumeDevices is skipped
// before its source is read, as the kubelet's populator does: no call for
// it, no error for its missing claim, a step saying so. An init or an
// ephemeral container's mount makes a volume used (docs/kubelet.md §11).
func TestUnusedVolumeSkipped(t *testing.T) {
	pod := `apiVersion: v1
kind: Pod
metadata: {name: app-1, namespace: default, uid: pod-uid-1}
spec:
  initContainers: [{name: init, image: busybox, volumeMounts: [{name: seed, mountPath: /seed}]}]
  containers: [{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]
  ephemeralContainers: [{name: debug, image: busybox, volumeMounts: [{name: debug, mountPath: /debug}]}]
  volumes:
  - ` + claimVol("data", "data-1") + `
  - ` + inlineVol("spare", "") + `
  - ` + claimVol("gone", "no-such-claim") + `
  - ` + inlineVol("seed", "") + `
  - ` + inlineVol("debug", "")
	e := newEnv(t, docs(csiDriverDoc("attachRequired: false", "volumeLifecycleModes: [Persistent, Ephemeral]"), pv1, pvc1, pod), newFakeDriver())
	res := e.mountOK("app-1")
	var published []string
	for _, v := range res.Volumes {
		published = append(published, v.PodVolume)
	}
	if want := []string{"data", "seed", "debug"}; !slices.Equal(published, want) {
		t.Errorf("volumes mounted %q, want %q", published, want)
	}
	var skipped []string
	for _, sk := range res.Skipped {
		skipped = append(skipped, sk.Name)
		if !sk.Unused || !strings.Contains(sk.Reason, "no container") {
			t.Errorf("skipped %s: %+v, want unused with a reason naming the containers", sk.Name, sk)
		}
	}
	if want := []string{"spare", "gone"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
	if n := len(e.drv.Calls()); n == 0 {
		t.Fatal("no calls at all")
	}
	for _, c := range e.drv.Calls() {
		if req, ok := c.Request.(*csi.NodePublishVolumeRequest); ok && strings.Contains(req.GetTargetPath(), "/spare/") {
			t.Errorf("the unused volume was published: %s", req.GetTargetPath())
		}
	}
	steps := strings.Join(e.steps(false), "\n")
	for _, name := range []string{"spare", "gone"} {
		if !strings.Contains(steps, `skipping unused volume "`+name+`"`) {
			t.Errorf("no step says %q is skipped as unused:\n%s", name, steps)
		}
	}
	e.unmountOK("app-1")
}

// A generic ephemeral volume's claim is <pod>-<volume>; paths use its PV
// name and readonly is false (docs/kubelet.md §1.2, §8).
func TestGenericEphemeralVolume(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pvDoc("pv-eph", "vol-1", "app-1-scratch"), pvcDoc("app-1-scratch", "pv-eph"),
		podDoc("app-1", "pod-uid-1", "{name: scratch, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}")),
		newFakeDriver())
	e.mountOK("app-1")
	req := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume")
	if want := e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-eph/mount"; req.GetTargetPath() != want || req.GetReadonly() {
		t.Errorf("target_path %q readonly %t; want %q, false", req.GetTargetPath(), req.GetReadonly(), want)
	}
	if got := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume").GetVolumeId(); got != "vol-1" {
		t.Errorf("volume_id = %q", got)
	}
}
