// Package difftable is the differential test's table of cases: every sample
// of fixtures/samples and the cases written here, each one pod on one node.
// The differential test (e2e/kubeletdiff) runs them through the kubelet's
// volume code, the whole-kubelet test (e2e/realkubelet) through a whole
// kubelet; both compare with `csi-kubelet-sim run`.
package difftable

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

// Case is one pod on one node: manifests given to both sides, the driver's
// node capabilities, and kubelet feature gates.
type Case struct {
	Name         string
	Sample       string   // a directory of fixtures/samples, or
	YAML         string   // manifests
	Caps         []string // the driver's node capabilities
	Gates        string   // kubelet --feature-gates, for both sides
	SELinuxLevel string   // --selinux-level (the kubelet code's fake translator allocates s0:c998,c999)
	Republish    bool     // one pod sync while the pod runs
	Stats        bool     // one round of volume stats while the pod runs
	SimArgs      []string // more simulator flags
	MinMinor     int      // the first Kubernetes minor the case applies to
	MaxMinor     int      // the last one (0: the newest)

	// RegularFileBlockTarget: the driver publishes a block volume as an
	// empty regular file instead of a loop device bind-mounted on the target.
	RegularFileBlockTarget bool
	// Faults: calls the driver fails (recorder.Fault).
	Faults []recorder.Fault
	// SimFails: the simulator reports a failed operation (exit 1, the
	// error on stderr) where the kubelet only records an event and goes
	// on; the error must contain this.
	SimFails     string
	PhaseTimeout time.Duration // how long a kubelet phase may take (0: 20s)
	// WholeKubeletRetries: on a whole kubelet the failed operation is
	// retried after the kubelet's backoff while the pod runs, and then
	// succeeds (the differential test's harness deletes the pod before the
	// backoff ends): the whole-kubelet test runs the simulator with
	// --retry-for, and both runs must end well.
	WholeKubeletRetries bool
	// TeardownStuck is the error (its prefix, the operation, e.g.
	// "UnmapVolume.UnmapBlockVolume failed") of a teardown that never
	// completes on a kubelet: the kubelet code retries it until the phase
	// timeout, the simulator exits 1 with it. The error after the volume's
	// name must be the same on both sides; then the streams are compared.
	TeardownStuck string
	// StuckMaxMinor: the last release whose teardown gets stuck so (0: all).
	StuckMaxMinor int

	// Outlier, when it returns a reason for a release, marks a case where
	// the kubelet code as this harness runs it is known to differ from a
	// real kubelet: a disagreement is then skipped with that reason.
	Outlier func(minor int) string
	// FSOutlier is the same for what the driver finds on disk (the "fs"
	// member): a case whose requests are identical is skipped with it.
	FSOutlier func(minor int) string
}

// Files writes the case's manifests under dir (a sample: its directory in
// samplesDir) and returns the files to give both sides.
func (c Case) Files(samplesDir, dir string) ([]string, error) {
	if c.Sample != "" {
		p, err := filepath.Abs(filepath.Join(samplesDir, c.Sample))
		if err != nil {
			return nil, err
		}
		return []string{p}, nil
	}
	d := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	p := filepath.Join(d, c.Name+".yaml")
	if err := os.WriteFile(p, []byte(c.YAML), 0o644); err != nil {
		return nil, err
	}
	return []string{p}, nil
}

// StuckAt is TeardownStuck for a release.
func (c Case) StuckAt(minor int) string {
	if c.StuckMaxMinor != 0 && minor > c.StuckMaxMinor {
		return ""
	}
	return c.TeardownStuck
}

// FSOutlierAt is FSOutlier's reason for a release, or "".
func (c Case) FSOutlierAt(minor int) string {
	if c.FSOutlier == nil {
		return ""
	}
	return c.FSOutlier(minor)
}

// OutlierAt is Outlier's reason for a release, or "".
func (c Case) OutlierAt(minor int) string {
	if c.Outlier == nil {
		return ""
	}
	return c.Outlier(minor)
}

// Applies tells whether the case applies to a release.
func (c Case) Applies(minor int) bool {
	return minor >= c.MinMinor && (c.MaxMinor == 0 || minor <= c.MaxMinor)
}

// Cases are every sample of samplesDir, then the table.
func Cases(samplesDir string) ([]Case, error) {
	entries, err := os.ReadDir(samplesDir)
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	var out []Case
	for _, e := range entries {
		// The webhook sample's CSI volume exists only once a mutating
		// webhook has added it, before the kubelet: the kubelet code has
		// no admission step to compare (e2e/webhook_test.go covers it).
		// The provision sample's PV exists only once the provisioner has
		// made it, before the kubelet: the kubelet code has no provisioner
		// (e2e/sidecars_test.go covers it). The apiserver sample's driver
		// reads the API server and its objects (CRDs, RBAC) exist only in
		// one: e2e/apiserver_test.go runs it with --apiserver.
		if e.IsDir() && e.Name() != "webhook" && e.Name() != "provision" && e.Name() != "apiserver" {
			// The reference driver's capabilities (make demo runs the samples against it).
			out = append(out, Case{Name: "sample-" + e.Name(), Sample: e.Name(), Caps: []string{"STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS"}})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no samples in %s", samplesDir)
	}
	for i, c := range table() {
		if c.YAML == "" {
			return nil, fmt.Errorf("case %s has no manifests", c.Name)
		}
		c.YAML = strings.ReplaceAll(c.YAML, "@UID@", fmt.Sprintf("7d1c0a55-0000-4000-8000-%012d", i+1))
		out = append(out, c)
	}
	return out, nil
}

// NodeName is the node of every case.
const NodeName = "sim-node"

const driver = "ref.csi.kubelet-sim.io"

var (
	stage = []string{"STAGE_UNSTAGE_VOLUME"}
	none  = []string{}
)

func caps(c ...string) []string { return c }

func docs(d ...string) string { return strings.Join(d, "---\n") }

func indent(s string, n int) string {
	if s == "" {
		return ""
	}
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func csiDriver(spec string) string {
	return "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: " + driver + "\nspec:\n" + indent(spec, 2)
}

// pv is pv-vol, bound to default/claim, with the CSI source's extra fields
// and more spec.
func pv(modes, csi, spec string) string {
	return "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv-vol\nspec:\n" +
		"  capacity:\n    storage: 1Gi\n  accessModes: [" + modes + "]\n" +
		"  claimRef:\n    namespace: default\n    name: claim\n" + indent(spec, 2) +
		"  csi:\n    driver: " + driver + "\n    volumeHandle: vol-1\n" + indent(csi, 4)
}

func pvc(modes, spec string) string {
	return "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: claim\n  namespace: default\nspec:\n" +
		"  accessModes: [" + modes + "]\n  resources:\n    requests:\n      storage: 1Gi\n  volumeName: pv-vol\n" + indent(spec, 2)
}

// The expansion cases: the mount (or map) expands the volume
// (expandVolumeDuringMount) and ignores the result, so the actual state keeps
// the claim's old size, and on the legacy path the reconciler's next pass
// expands it again while in use (GenerateExpandInUseVolumeFunc; for a block
// volume with the block mapper's staging path even when the driver does not
// stage). The harness waits for that in-use expansion, and the simulator
// makes it too (docs/kubelet.md §11).

// grown gives the PV 2Gi; smaller records 1Gi in the claim's status, so
// the kubelet expands during mount (expandVolumeDuringMount).
func grown(pv string) string { return strings.Replace(pv, "storage: 1Gi", "storage: 2Gi", 1) }

func smaller(pvc string) string {
	return pvc + "status:\n  phase: Bound\n  accessModes: [ReadWriteOnce]\n  capacity:\n    storage: 1Gi\n"
}

// allocated adds the resizer's status.allocatedResources (2Gi) to a claim
// made by smaller, and the resize status if not empty.
func allocated(pvc, resizeStatus string) string {
	s := pvc + "  allocatedResources:\n    storage: 2Gi\n"
	if resizeStatus != "" {
		s += "  allocatedResourceStatuses:\n    storage: " + resizeStatus + "\n"
	}
	return s
}

// claimVolume and inlineVolume are the pod's volume "vol".
func claimVolume(readOnly bool) string {
	s := "persistentVolumeClaim:\n  claimName: claim\n"
	if readOnly {
		s += "  readOnly: true\n"
	}
	return s
}

func inlineVolume(extra string) string {
	return "csi:\n  driver: " + driver + "\n" + indent(extra, 2)
}

// pod is default/app (service account app-sa), one container mounting
// "vol" at /data; podSC and containerSC are securityContext fields.
func pod(volume, podSC, containerSC string) string {
	s := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\n  namespace: default\n  uid: @UID@\nspec:\n" +
		"  nodeName: sim-node\n  serviceAccountName: app-sa\n"
	if podSC != "" {
		s += "  securityContext:\n" + indent(podSC, 4)
	}
	s += "  containers:\n  - name: app\n    image: registry.k8s.io/pause:3.10\n"
	if containerSC != "" {
		s += "    securityContext:\n" + indent(containerSC, 6)
	}
	s += "    volumeMounts:\n    - name: vol\n      mountPath: /data\n"
	s += "  volumes:\n  - name: vol\n" + indent(volume, 4)
	return s
}

// blockPod is pod with the volume as a raw block device (volumeDevices).
func blockPod(volume string) string {
	return strings.Replace(pod(volume, "", ""), "    volumeMounts:\n    - name: vol\n      mountPath: /data\n",
		"    volumeDevices:\n    - name: vol\n      devicePath: /dev/xvda\n", 1)
}

// blockCase is a PV in volumeMode Block.
func blockCase(driverSpec, modes, csi string, extra ...string) string {
	d := []string{csiDriver(driverSpec), pv(modes, csi, "volumeMode: Block\n"), pvc(modes, "volumeMode: Block\n")}
	d = append(d, extra...)
	return docs(append(d, blockPod(claimVolume(false)))...)
}

func secret(ns, name, data string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\nstringData:\n" + indent(data, 2)
}

func attachment(meta string) string {
	return "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata:\n  name: " + AttachmentName("vol-1", driver, NodeName) +
		"\nspec:\n  attacher: " + driver + "\n  nodeName: sim-node\n  source:\n    persistentVolumeName: pv-vol\nstatus:\n  attached: true\n" +
		"  attachmentMetadata:\n" + indent(meta, 4)
}

const (
	noAttach      = "attachRequired: false\n"
	seLinux       = "seLinuxOptions:\n  level: s0:c1,c2\n"
	fsGroup       = "fsGroup: 2000\n"
	rwoExt4       = "fsType: ext4\n"
	tokenRequests = "tokenRequests:\n- audience: vault\n  expirationSeconds: 3600\n- audience: \"\"\n"
)

// A PV of the given modes on a driver with the given CSIDriver spec.
func pvCase(driverSpec, modes, csi, pvSpec, podSC string, readOnly bool) string {
	return docs(csiDriver(driverSpec), pv(modes, csi, pvSpec), pvc(modes, ""), pod(claimVolume(readOnly), podSC, ""))
}

func table() []Case {
	return []Case{
		// Inline (ephemeral) volumes.
		{Name: "inline-podinfo", Caps: none, YAML: docs(
			csiDriver(noAttach+"podInfoOnMount: true\nvolumeLifecycleModes: [Ephemeral]\n"),
			pod(inlineVolume("readOnly: true\nvolumeAttributes:\n  size: 1Gi\n  csi.storage.k8s.io/pod.uid: user-value\n"), "", ""))},
		{Name: "inline-no-podinfo-stage-cap", Caps: stage, YAML: docs(
			csiDriver(noAttach+"volumeLifecycleModes: [Persistent, Ephemeral]\n"),
			pod(inlineVolume("fsType: xfs\nvolumeAttributes:\n  a: b\n"), "", ""))},

		// Persistent volumes, with and without staging.
		{Name: "pv-stage", Caps: stage, YAML: pvCase(noAttach, "ReadWriteOnce",
			rwoExt4+"volumeAttributes:\n  tier: fast\n", "mountOptions: [noatime, discard]\n", "", false)},
		{Name: "pv-nostage", Caps: none, YAML: pvCase(noAttach, "ReadWriteOnce",
			rwoExt4+"volumeAttributes:\n  tier: fast\n", "mountOptions: [noatime]\n", "", false)},
		{Name: "pv-nostage-podinfo", Caps: none, YAML: pvCase(noAttach+"podInfoOnMount: true\n", "ReadWriteMany",
			"volumeAttributes:\n  csi.storage.k8s.io/ephemeral: user-value\n", "", "", false)},
		{Name: "pv-readonly-claim", Caps: stage, YAML: pvCase(noAttach, "ReadOnlyMany", "", "", "", true)},
		{Name: "pv-csi-readonly", Caps: stage, YAML: pvCase(noAttach, "ReadWriteOnce", "readOnly: true\n", "", "", false)},
		{Name: "pv-first-access-mode", Caps: stage, YAML: pvCase(noAttach, "ReadOnlyMany, ReadWriteOnce", "", "", "", false)},

		// Attach: publish_context from the VolumeAttachment.
		{Name: "attach-publish-context-stage", Caps: stage, YAML: docs(
			csiDriver("attachRequired: true\n"), pv("ReadWriteOnce", rwoExt4, ""), pvc("ReadWriteOnce", ""),
			attachment("device: /dev/sdx\nlun: \"7\"\n"), pod(claimVolume(false), "", ""))},
		{Name: "attach-publish-context-nostage", Caps: none, YAML: docs(
			csiDriver("attachRequired: true\n"), pv("ReadWriteOnce", "", ""), pvc("ReadWriteOnce", ""),
			attachment("device: /dev/sdx\n"), pod(claimVolume(false), "", ""))},
		{Name: "attach-no-csidriver", Caps: stage, YAML: docs(
			pv("ReadWriteOnce", "", ""), pvc("ReadWriteOnce", ""),
			attachment("device: /dev/sdy\n"), pod(claimVolume(false), "", ""))},

		// Secrets.
		{Name: "secrets-pv", Caps: stage, YAML: docs(
			csiDriver(noAttach), secret("storage", "stage", "user: admin\npassword: s3cr3t\n"), secret("other", "publish", "key: value\n"),
			pv("ReadWriteOnce", "nodeStageSecretRef:\n  name: stage\n  namespace: storage\nnodePublishSecretRef:\n  name: publish\n  namespace: other\n", ""),
			pvc("ReadWriteOnce", ""), pod(claimVolume(false), "", ""))},
		{Name: "secrets-inline", Caps: none, YAML: docs(
			csiDriver(noAttach+"volumeLifecycleModes: [Ephemeral]\n"), secret("default", "publish", "key: value\n"),
			pod(inlineVolume("nodePublishSecretRef:\n  name: publish\n"), "", ""))},

		// Service-account tokens.
		{Name: "tokens-volume-context", Caps: stage, YAML: pvCase(noAttach+"podInfoOnMount: true\n"+tokenRequests, "ReadWriteOnce", "volumeAttributes:\n  a: b\n", "", "", false)},
		{Name: "tokens-volume-context-no-podinfo", Caps: stage, YAML: pvCase(noAttach+tokenRequests+"serviceAccountTokenInSecrets: false\n", "ReadWriteOnce", "", "", "", false)},
		{Name: "tokens-in-secrets", Caps: stage, YAML: docs(
			csiDriver(noAttach+"tokenRequests:\n- audience: https://vault.example.com/?a=1&b=<2>\n  expirationSeconds: 7200\nserviceAccountTokenInSecrets: true\n"),
			secret("other", "publish", "key: value\n"),
			pv("ReadWriteOnce", "nodePublishSecretRef:\n  name: publish\n  namespace: other\n", ""),
			pvc("ReadWriteOnce", ""), pod(claimVolume(false), "", ""))},
		{Name: "tokens-in-secrets-no-secret", Caps: none, YAML: pvCase(noAttach+tokenRequests+"serviceAccountTokenInSecrets: true\n", "ReadWriteOnce", "", "", "", false)},
		{Name: "tokens-inline", Caps: none, YAML: docs(
			csiDriver(noAttach+"podInfoOnMount: true\nvolumeLifecycleModes: [Ephemeral]\n"+tokenRequests),
			pod(inlineVolume(""), "", ""))},

		// SELinux: the context= mount option, by access mode and gate.
		{Name: "selinux-rwop-gate-on", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOncePod", rwoExt4, "mountOptions: [noatime]\n", seLinux, false)},
		{Name: "selinux-rwop-gate-off", Caps: stage, Gates: "SELinuxMount=false", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOncePod", rwoExt4, "mountOptions: [noatime]\n", seLinux, false)},
		{Name: "selinux-rwo-gate-on", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOnce", rwoExt4, "", seLinux, false)},
		{Name: "selinux-rwo-gate-off", Caps: stage, Gates: "SELinuxMount=false", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOnce", rwoExt4, "", seLinux, false)},
		// The release's own gates: SELinuxMount is on by default from 1.37
		// (GA), so only then does a ReadWriteOnce volume get context=.
		{Name: "selinux-rwo-default-gates", Caps: stage, SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOnce", rwoExt4, "", seLinux, false)},
		// Two access modes: with SELinuxMount, 1.30 and 1.31 still wanted
		// exactly one (util.VolumeSupportsSELinuxMount), from 1.32 any.
		{Name: "selinux-two-access-modes-gate-on", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOnce, ReadOnlyMany", rwoExt4, "", seLinux, false)},
		{Name: "selinux-rwx-gate-on-nostage", Caps: none, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteMany", "", "", seLinux, false)},
		{Name: "selinux-recursive-policy", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOncePod", "", "", seLinux+"seLinuxChangePolicy: Recursive\n", false)},
		{Name: "selinux-driver-without-selinuxmount", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: false\n", "ReadWriteOncePod", "", "", seLinux, false)},
		{Name: "selinux-container-level", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: docs(csiDriver(noAttach+"seLinuxMount: true\n"), pv("ReadWriteOncePod", "", ""), pvc("ReadWriteOncePod", ""),
				pod(claimVolume(false), seLinux, "seLinuxOptions:\n  level: s0:c3,c4\n"))},
		{Name: "selinux-allocated-level", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c998,c999",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOncePod", "", "", "seLinuxOptions:\n  type: container_t\n", false)},
		{Name: "selinux-inline", Caps: none, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2", YAML: docs(
			csiDriver(noAttach+"seLinuxMount: true\nvolumeLifecycleModes: [Ephemeral]\n"),
			pod(inlineVolume(""), seLinux, ""))},

		// fsGroup: delegated with VOLUME_MOUNT_GROUP, else the kubelet's walk
		// (seen by the driver at NodeUnpublishVolume: the target's group and mode).
		{Name: "fsgroup-volume-mount-group", Caps: caps("STAGE_UNSTAGE_VOLUME", "VOLUME_MOUNT_GROUP"),
			YAML: pvCase(noAttach, "ReadWriteOnce", rwoExt4, "", fsGroup, false)},
		{Name: "fsgroup-volume-mount-group-policy-none", Caps: caps("STAGE_UNSTAGE_VOLUME", "VOLUME_MOUNT_GROUP"),
			YAML: pvCase(noAttach+"fsGroupPolicy: None\n", "ReadWriteMany", "", "", fsGroup, false)},
		{Name: "fsgroup-volume-mount-group-inline", Caps: caps("VOLUME_MOUNT_GROUP"), YAML: docs(
			csiDriver(noAttach+"volumeLifecycleModes: [Ephemeral]\n"), pod(inlineVolume(""), fsGroup, ""))},
		{Name: "fsgroup-kubelet-walk", Caps: stage, YAML: pvCase(noAttach, "ReadWriteOnce", rwoExt4, "", fsGroup, false)},
		{Name: "fsgroup-kubelet-walk-on-root-mismatch", Caps: stage,
			YAML: pvCase(noAttach, "ReadWriteOnce", rwoExt4, "", fsGroup+"fsGroupChangePolicy: OnRootMismatch\n", false)},
		{Name: "fsgroup-policy-file-rwx", Caps: stage, YAML: pvCase(noAttach+"fsGroupPolicy: File\n", "ReadWriteMany", "", "", fsGroup, false)},
		{Name: "fsgroup-policy-none", Caps: stage, YAML: pvCase(noAttach+"fsGroupPolicy: None\n", "ReadWriteOnce", rwoExt4, "", fsGroup, false)},
		{Name: "fsgroup-rwx-with-fstype", Caps: stage, YAML: pvCase(noAttach, "ReadWriteMany", rwoExt4, "", fsGroup, false)},
		{Name: "fsgroup-rwo-without-fstype", Caps: stage, YAML: pvCase(noAttach, "ReadWriteOnce", "", "", fsGroup, false)},
		{Name: "fsgroup-readonly", Caps: stage, YAML: pvCase(noAttach+"fsGroupPolicy: File\n", "ReadWriteOnce", rwoExt4, "", fsGroup, true)},
		{Name: "fsgroup-inline-walk", Caps: none, YAML: docs(
			csiDriver(noAttach+"volumeLifecycleModes: [Ephemeral]\n"), pod(inlineVolume("fsType: ext4\n"), fsGroup, ""))},

		// Access modes with and without SINGLE_NODE_MULTI_WRITER.
		{Name: "snmw-rwo", Caps: caps("STAGE_UNSTAGE_VOLUME", "SINGLE_NODE_MULTI_WRITER"), YAML: pvCase(noAttach, "ReadWriteOnce", "", "", "", false)},
		{Name: "snmw-rwop", Caps: caps("STAGE_UNSTAGE_VOLUME", "SINGLE_NODE_MULTI_WRITER"), YAML: pvCase(noAttach, "ReadWriteOncePod", "", "", "", false)},
		{Name: "snmw-rwx", Caps: caps("STAGE_UNSTAGE_VOLUME", "SINGLE_NODE_MULTI_WRITER"), YAML: pvCase(noAttach, "ReadWriteMany", "", "", "", false)},
		{Name: "snmw-inline", Caps: caps("SINGLE_NODE_MULTI_WRITER"), YAML: docs(
			csiDriver(noAttach+"volumeLifecycleModes: [Ephemeral]\n"), pod(inlineVolume(""), "", ""))},
		{Name: "rwop-without-snmw", Caps: stage, YAML: pvCase(noAttach, "ReadWriteOncePod", "", "", "", false)},

		// Block volumes (volumeDevices).
		{Name: "block-stage", Caps: stage, YAML: blockCase(noAttach, "ReadWriteOnce", "volumeAttributes:\n  a: b\n")},
		{Name: "block-nostage", Caps: none, YAML: blockCase(noAttach, "ReadWriteOnce", "")},
		{Name: "block-attach-podinfo-tokens-secrets", Caps: stage, YAML: blockCase(
			"podInfoOnMount: true\n"+tokenRequests, "ReadWriteOncePod",
			"nodeStageSecretRef:\n  name: stage\n  namespace: default\nnodePublishSecretRef:\n  name: publish\n  namespace: default\n",
			attachment("device: /dev/sdb\n"), secret("default", "stage", "a: b\n"), secret("default", "publish", "c: d\n"))},
		// A driver that publishes a regular file: the kubelet's teardown
		// removes its bind mount at <globalMapPath>/<podUID> only when it is
		// a device node (IsDeviceBindMountExist); over a regular file the
		// removal fails (EBUSY) and is retried for ever, and the volume is
		// never unpublished nor unstaged.
		{Name: "block-regular-file-target-real-paths", Caps: stage, RegularFileBlockTarget: true, PhaseTimeout: 3 * time.Second,
			TeardownStuck: "UnmapVolume.UnmapBlockVolume failed", YAML: blockCase(noAttach, "ReadWriteOnce", "")},
		{Name: "block-snmw-fsgroup-selinux", Caps: caps("STAGE_UNSTAGE_VOLUME", "SINGLE_NODE_MULTI_WRITER", "VOLUME_MOUNT_GROUP"),
			Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2", YAML: strings.Replace(
				blockCase(noAttach+"seLinuxMount: true\n", "ReadWriteOnce", ""),
				"  serviceAccountName: app-sa\n", "  serviceAccountName: app-sa\n  securityContext:\n    fsGroup: 2000\n    seLinuxOptions:\n      level: s0:c1,c2\n", 1)},

		// Republish (requiresRepublish) and stats, while the pod runs.
		{Name: "republish-inline-tokens", Caps: none, Republish: true, YAML: docs(
			csiDriver(noAttach+"podInfoOnMount: true\nrequiresRepublish: true\nvolumeLifecycleModes: [Ephemeral]\n"+tokenRequests),
			pod(inlineVolume(""), "", ""))},
		{Name: "republish-pv-attach-stage", Caps: stage, Republish: true, YAML: docs(
			csiDriver("attachRequired: true\nrequiresRepublish: true\n"+tokenRequests+"serviceAccountTokenInSecrets: true\n"),
			pv("ReadWriteOnce", rwoExt4, ""), pvc("ReadWriteOnce", ""), attachment("device: /dev/sdz\n"),
			pod(claimVolume(false), fsGroup, ""))},
		// A republish that fails with a final error after the driver
		// emptied the target: up to 1.35 the kubelet removes the target and
		// its vol_data.json (removeMountDir), from 1.36 it keeps them, the
		// pod still using the mount (csi_mounter.go SetUpAt, #121271).
		// Without vol_data.json there is no unmounter (csiPlugin.NewUnmounter):
		// up to 1.35 the volume is never unpublished.
		{Name: "republish-fails-final", Caps: stage, Republish: true, PhaseTimeout: 5 * time.Second, WholeKubeletRetries: true,
			TeardownStuck: "UnmountVolume.NewUnmounter failed", StuckMaxMinor: 35,
			Faults:   []recorder.Fault{{Method: "NodePublishVolume", From: 2, To: 2, Code: codes.InvalidArgument}},
			SimFails: `MountVolume.SetUp failed for volume "pv-vol" : rpc error: code = InvalidArgument`,
			YAML:     pvCase(noAttach+"requiresRepublish: true\n", "ReadWriteOnce", "", "", "", false)},
		{Name: "republish-not-required", Caps: stage, Republish: true, YAML: pvCase(noAttach, "ReadWriteOnce", "", "", "", false)},
		// A block volume's remount is the whole map operation again.
		{Name: "republish-block", Caps: stage, Republish: true, YAML: blockCase(noAttach+"podInfoOnMount: true\nrequiresRepublish: true\n", "ReadWriteOnce", "")},
		// Expansion during mount: the PV grew past the claim's status.
		{Name: "expand-pv", Caps: caps("STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"), YAML: docs(csiDriver(noAttach),
			grown(pv("ReadWriteOnce", rwoExt4+"nodeExpandSecretRef:\n  name: expand\n  namespace: default\n", "mountOptions: [noatime]\n")),
			smaller(pvc("ReadWriteOnce", "")), secret("default", "expand", "k: v\n"), pod(claimVolume(false), "", ""))},
		{Name: "expand-block-stage", Caps: caps("STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"), YAML: docs(csiDriver(noAttach),
			grown(pv("ReadWriteOnce", "", "volumeMode: Block\n")), smaller(pvc("ReadWriteOnce", "volumeMode: Block\n")), blockPod(claimVolume(false)))},
		{Name: "expand-block-nostage", Caps: caps("EXPAND_VOLUME"), YAML: docs(csiDriver(noAttach),
			grown(pv("ReadWriteOnce", "", "volumeMode: Block\n")), smaller(pvc("ReadWriteOnce", "volumeMode: Block\n")), blockPod(claimVolume(false)))},
		// A filesystem volume of a driver that does not stage: both
		// expansions send the device mount path as staging path all the
		// same (the CSI plugin is device-mountable for every driver).
		{Name: "expand-fs-nostage", Caps: caps("EXPAND_VOLUME"), YAML: docs(csiDriver(noAttach),
			grown(pv("ReadWriteOnce", rwoExt4, "")), smaller(pvc("ReadWriteOnce", "")), pod(claimVolume(false), "", ""))},
		// A driver without EXPAND_VOLUME: the mount takes the legacy
		// path's OperationNotSupported as done but leaves the claim's
		// size, so the in-use pass asks for the capability once more.
		{Name: "expand-without-capability", Caps: stage, YAML: docs(csiDriver(noAttach),
			grown(pv("ReadWriteOnce", rwoExt4, "")), smaller(pvc("ReadWriteOnce", "")), pod(claimVolume(false), "", ""))},
		// FailedPrecondition: the driver cannot expand the volume in use;
		// the mount goes on and the reconciler does not expand it again.
		{Name: "expand-failed-precondition", Caps: caps("STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"),
			Faults: []recorder.Fault{{Method: "NodeExpandVolume", From: 1, To: 1, Code: codes.FailedPrecondition}},
			YAML:   docs(csiDriver(noAttach), grown(pv("ReadWriteOnce", rwoExt4, "")), smaller(pvc("ReadWriteOnce", "")), pod(claimVolume(false), "", ""))},
		// A claim whose resizer recorded allocatedResources but no resize
		// status: 1.30 (RecoverVolumeExpansionFailure off) takes the legacy
		// path and expands to the PV's size; from 1.31 the claim's status
		// alone selects the new path, which waits for NodeResizePending
		// (checkForRecoveryFromExpansion, operation_generator.go).
		{Name: "expand-claim-allocated-no-resize-status", Caps: caps("STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"), YAML: docs(csiDriver(noAttach),
			grown(pv("ReadWriteOnce", rwoExt4, "")), allocated(smaller(pvc("ReadWriteOnce", "")), ""), pod(claimVolume(false), "", ""))},
		// The same claim with NodeResizePending: every release expands.
		{Name: "expand-claim-node-resize-pending", Caps: caps("STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"), YAML: docs(csiDriver(noAttach),
			grown(pv("ReadWriteOnce", rwoExt4, "")), allocated(smaller(pvc("ReadWriteOnce", "")), "NodeResizePending"), pod(claimVolume(false), "", ""))},
		// The same with ReadWriteMany: the in-use pass finds the claim grown
		// by the mount and expands it again on every release (up to 1.31
		// any claim, from 1.32 only ReadWriteMany; node_expander.go
		// runPreCheck).
		{Name: "expand-claim-rwx-node-resize-pending", Caps: caps("STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME"), YAML: docs(csiDriver(noAttach),
			grown(pv("ReadWriteMany", "", "")), allocated(smaller(pvc("ReadWriteMany", "")), "NodeResizePending"), pod(claimVolume(false), "", ""))},
		{Name: "stats", Caps: caps("STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS"), Stats: true, YAML: pvCase(noAttach, "ReadWriteOnce", rwoExt4, "", "", false)},
		{Name: "stats-without-capability", Caps: stage, Stats: true, YAML: pvCase(noAttach, "ReadWriteOnce", "", "", "", false)},
		// Up to 1.36, with the alpha gate: a VOLUME_CONDITION query before each
		// NodeGetVolumeStats (the capability is gone from the CSI spec 1.37 uses).
		{Name: "stats-volume-condition-gate", MaxMinor: 36, Caps: caps("STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS", "VOLUME_CONDITION"), Stats: true,
			Gates: "CSIVolumeHealth=true", YAML: pvCase(noAttach, "ReadWriteOnce", "", "", "", false)},
		{Name: "stats-inline", Caps: caps("GET_VOLUME_STATS"), Stats: true, YAML: docs(
			csiDriver(noAttach+"volumeLifecycleModes: [Ephemeral]\n"), pod(inlineVolume(""), "", ""))},
		// volume_path is the kubelet's bind mount of the device, <globalMapPath>/<podUID>.
		{Name: "stats-block", Caps: caps("STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS"), Stats: true, YAML: blockCase(noAttach, "ReadWriteOnce", "")},

		// More of what the rest of the cluster does to a pod.
		{Name: "namespace-and-default-service-account", Caps: stage, YAML: docs(
			csiDriver(noAttach+"podInfoOnMount: true\nvolumeLifecycleModes: [Ephemeral]\n"+tokenRequests),
			strings.NewReplacer("  namespace: default\n", "  namespace: team-a\n", "  serviceAccountName: app-sa\n", "").Replace(pod(inlineVolume(""), "", "")))},
		{Name: "generic-ephemeral-volume", Caps: stage, YAML: docs(
			csiDriver(noAttach+"podInfoOnMount: true\n"),
			strings.NewReplacer("name: claim\n", "name: app-vol\n").Replace(pv("ReadWriteOnce", "", "")),
			strings.Replace(pvc("ReadWriteOnce", ""), "  name: claim\n", "  name: app-vol\n  ownerReferences:\n  - apiVersion: v1\n    kind: Pod\n    name: app\n    uid: @UID@\n    controller: true\n", 1),
			pod("ephemeral:\n  volumeClaimTemplate:\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources:\n        requests:\n          storage: 1Gi\n", "", ""))},
		{Name: "selinux-init-container", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: docs(csiDriver(noAttach+"seLinuxMount: true\n"), pv("ReadWriteOncePod", "", ""), pvc("ReadWriteOncePod", ""),
				strings.Replace(pod(claimVolume(false), "", ""), "  containers:\n",
					"  initContainers:\n  - name: init\n    image: registry.k8s.io/pause:3.10\n    securityContext:\n      seLinuxOptions:\n        level: s0:c5,c6\n    volumeMounts:\n    - name: vol\n      mountPath: /init\n  containers:\n", 1))},
		// Volumes no container uses are skipped before their source is
		// read (the populator's "Skipping unused volume"): no call for
		// "spare", no error for the missing claim of "gone".
		{Name: "unused-volumes", Caps: stage, YAML: docs(
			csiDriver(noAttach+"volumeLifecycleModes: [Persistent, Ephemeral]\n"), pv("ReadWriteOnce", "", ""), pvc("ReadWriteOnce", ""),
			pod(claimVolume(false), "", "")+"  - name: spare\n"+indent(inlineVolume(""), 4)+
				"  - name: gone\n    persistentVolumeClaim:\n      claimName: no-such-claim\n")},
		// What counts as used: a mount in any container type
		// (GetPodVolumeNames visits init, regular and ephemeral containers).
		// One used volume per case: the kubelet mounts several side by
		// side, in no fixed order.
		{Name: "volume-used-by-init-container-only", Caps: stage, YAML: docs(
			csiDriver(noAttach), pv("ReadWriteOnce", "", ""), pvc("ReadWriteOnce", ""),
			strings.Replace(strings.Replace(pod(claimVolume(false), "", ""), "    volumeMounts:\n    - name: vol\n      mountPath: /data\n", "", 1),
				"  containers:\n", "  initContainers:\n  - name: init\n    image: registry.k8s.io/pause:3.10\n"+
					"    volumeMounts:\n    - name: vol\n      mountPath: /init\n  containers:\n", 1)+"  - name: spare\n"+indent(inlineVolume(""), 4))},
		{Name: "volume-used-by-ephemeral-container-only", Caps: stage, YAML: docs(
			csiDriver(noAttach), pv("ReadWriteOnce", "", ""), pvc("ReadWriteOnce", ""),
			strings.Replace(strings.Replace(pod(claimVolume(false), "", ""), "    volumeMounts:\n    - name: vol\n      mountPath: /data\n", "", 1),
				"  volumes:\n", "  ephemeralContainers:\n  - name: debug\n    image: registry.k8s.io/pause:3.10\n"+
					"    volumeMounts:\n    - name: vol\n      mountPath: /debug\n  volumes:\n", 1))},
		{Name: "selinux-user-and-level", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOncePod", "", "", "seLinuxOptions:\n  user: staff_u\n  level: s0:c7,c8\n", false)},
		{Name: "selinux-role-and-type", Caps: stage, Gates: "SELinuxMount=true", SELinuxLevel: "s0:c1,c2",
			YAML: pvCase(noAttach+"seLinuxMount: true\n", "ReadWriteOncePod", "", "", "seLinuxOptions:\n  role: sysadm_r\n  type: spc_t\n  level: s0:c1,c2\n", false),
			Outlier: func(int) string {
				return "the harness labels with the kubelet's fake SELinux translator (pkg/volume/util NewFakeSELinuxLabelTranslator), " +
					"which copies the pod's role and type into the file label; on a node, label.InitLabels keeps the policy's " +
					"object_r:container_file_t and takes only user and level from the pod (docs/kubelet.md §6.1)"
			}},
	}
}

// AttachmentName is the VolumeAttachment name the kubelet looks for
// (csi_attacher.go getAttachmentName).
func AttachmentName(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}
