package node

// The manifests node tests load: small YAML documents, joined.

import (
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// docs joins YAML documents.
func docs(ds ...string) string { return strings.Join(ds, "\n---\n") }

// csiDriverDoc is a CSIDriver for testDriver with the given spec lines
// (indented by two spaces, e.g. "attachRequired: false").
func csiDriverDoc(spec ...string) string {
	s := "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: " + testDriver + "\nspec:"
	if len(spec) == 0 {
		return s + " {}"
	}
	for _, l := range spec {
		s += "\n  " + l
	}
	return s
}

// noAttachDriver is the CSIDriver most tests use: no attach, no pod info.
var noAttachDriver = csiDriverDoc("attachRequired: false")

// pvDoc is a CSI PV bound to claim default/<claim>; extra lines go under
// spec. An extra line starting with "csi:" replaces the default csi source,
// one with "accessModes:" the default [ReadWriteOnce].
func pvDoc(name, handle, claim string, extra ...string) string {
	s := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity: {storage: 1Gi}
  claimRef: {namespace: default, name: %s}`, name, claim)
	hasCSI, hasModes := false, false
	for _, l := range extra {
		hasCSI = hasCSI || strings.HasPrefix(l, "csi:")
		hasModes = hasModes || strings.HasPrefix(l, "accessModes:")
		s += "\n  " + l
	}
	if !hasCSI {
		s += fmt.Sprintf("\n  csi: {driver: %s, volumeHandle: %s}", testDriver, handle)
	}
	if !hasModes {
		s += "\n  accessModes: [ReadWriteOnce]"
	}
	return s
}

func pvcDoc(name, volumeName string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  volumeName: %s`, name, volumeName)
}

// podDoc is a pod in namespace default whose one container mounts every
// volume (an unused volume is skipped: docs/kubelet.md §11); volumes are
// YAML flow mappings "{name: N, ...}".
func podDoc(name, uid string, volumes ...string) string {
	s := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
  uid: %s
spec:
  serviceAccountName: app-sa
  nodeName: node-1
  containers:
  - name: app
    image: busybox
    volumeMounts:`, name, uid)
	if len(volumes) == 0 {
		return s + " []\n  volumes: []"
	}
	for _, v := range volumes {
		s += fmt.Sprintf("\n    - {name: %s, mountPath: /mnt/%s}", volName(v), volName(v))
	}
	s += "\n  volumes:"
	for _, v := range volumes {
		s += "\n  - " + v
	}
	return s
}

// blockPodDoc is podDoc with the volumes as raw block devices
// (volumeDevices), as a pod of a volumeMode Block claim has them.
func blockPodDoc(name, uid string, volumes ...string) string {
	s := podDoc(name, uid, volumes...)
	s = strings.Replace(s, "volumeMounts:", "volumeDevices:", 1)
	for _, v := range volumes {
		s = strings.Replace(s, "mountPath: /mnt/"+volName(v), "devicePath: /dev/"+volName(v), 1)
	}
	return s
}

// volName is the name of a volume written as "{name: N, ...}".
func volName(v string) string {
	n, _, _ := strings.Cut(strings.TrimPrefix(v, "{name: "), ",")
	return n
}

func claimVol(name, claim string) string {
	return fmt.Sprintf("{name: %s, persistentVolumeClaim: {claimName: %s}}", name, claim)
}

func inlineVol(name string, csiFields string) string {
	if csiFields != "" {
		csiFields = ", " + csiFields
	}
	return fmt.Sprintf("{name: %s, csi: {driver: %s%s}}", name, testDriver, csiFields)
}

// vaDoc is the VolumeAttachment of handle on node-1, by its literal name.
func vaDoc(name, pv string, attached bool, status ...string) string {
	s := fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata:
  name: %s
spec:
  attacher: %s
  nodeName: node-1
  source: {persistentVolumeName: %s}
status:
  attached: %t`, name, testDriver, pv, attached)
	for _, l := range status {
		s += "\n  " + l
	}
	return s
}

// The standard objects: PV pv-1 (handle vol-1) bound to claim data-1, used
// by pod app-1 (uid pod-uid-1) as volume "data".
var (
	pv1  = pvDoc("pv-1", "vol-1", "data-1")
	pvc1 = pvcDoc("data-1", "pv-1")
	pod1 = podDoc("app-1", "pod-uid-1", claimVol("data", "data-1"))
	// blockPod1 is pod1 with "data" in volumeDevices.
	blockPod1 = blockPodDoc("app-1", "pod-uid-1", claimVol("data", "data-1"))
	capStage  = csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	capSNMW   = csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER
	capVMG    = csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP
)

// Literal kubelet facts for the standard objects (docs/kubelet.md §1.3, §10, §2),
// computed by hand with python3 hashlib.sha256.
const (
	// hex(sha256("vol-1"))
	sha256Vol1 = "d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49"
	// "csi-" + hex(sha256("vol-1" + "hostpath.csi.k8s.io" + "node-1"))
	attachmentVol1 = "csi-a5a2e67339ab5660a390dc86be397e784322823ff01f40cf2c01a72c3cab1374"
	// "csi-" + hex(sha256("pod-uid-1" + "scratch"))
	inlineHandlePod1Scratch = "csi-c5699e390261e9e6987cb40a451a4e699b550c7b5f2b6574fc12407e6f10fb2f"
)

// Paths of the standard objects under root, written out (docs/kubelet.md §1.2, §1.3).
func targetPV1(root string) string {
	return root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1/mount"
}

func globalmountVol1(root string) string {
	return root + "/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/" + sha256Vol1 + "/globalmount"
}
