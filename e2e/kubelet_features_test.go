package e2e

// End-to-end tests of "the rest of the kubelet" (issue 4): SELinux mount
// options, fsGroup (delegated and kubelet-applied), requiresRepublish,
// NodeGetVolumeStats, NodeExpandVolume, several pods on one volume, and the
// kubelet versions and feature gates that decide them.
//
// Requests are read from the drivers' side: the Kubernetes e2e CSI mock
// driver's gRPCCall log (what it received, byte for byte) and, for real
// ownership changes, the reference driver's bind mounts. Every expected value
// is written from docs/kubelet.md (the section is named next to it),
// never from the simulator's own output; where docs/kubelet.md is silent, from the
// Kubernetes source it was read from (named where used: go-selinux's MCS
// format, the order of the conflicting labels, the expansion pre-checks).
// Every run also checks that nothing is left behind (no root dir, no mounts).

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/mocklog"
)

const (
	ftUID1 = "f5a7e000-0000-4000-8000-000000000001"
	ftUID2 = "f5a7e000-0000-4000-8000-000000000002"

	// docs/kubelet.md §6.1/§6.3: with the usual policy the file label is
	// <user or system_u>:object_r:container_file_t:<level>, and the option
	// is fmt.Sprintf("context=%q", label).
	ftLabel12 = "system_u:object_r:container_file_t:s0:c1,c2"
	ftLabel34 = "system_u:object_r:container_file_t:s0:c3,c4"
	ftCtx12   = `context="system_u:object_r:container_file_t:s0:c1,c2"`

	ftTokensKey = "csi.storage.k8s.io/serviceAccount.tokens" // docs/kubelet.md §3, §4.4

	// docs/kubelet.md §8: the kubelet's error for a second pod on a RWOP volume.
	ftRWOPError = "volume uses the ReadWriteOncePod access mode and is already in use by another pod"
)

var (
	ftRWO  = corev1.ReadWriteOnce
	ftRWX  = corev1.ReadWriteMany
	ftRWOP = corev1.ReadWriteOncePod
)

// ---------------------------------------------------------------------------
// Manifests, built as API objects and written as YAML

func ftBool(b bool) *bool            { return &b }
func ftInt64(i int64) *int64         { return &i }
func ftGi(n int64) resource.Quantity { return *resource.NewQuantity(n<<30, resource.BinarySI) }

// ftYAML renders objects as a multi-document YAML file.
func ftYAML(tb testing.TB, objs ...any) string {
	tb.Helper()
	var docs []string
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			tb.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	return strings.Join(docs, "---\n")
}

// ftDriver is a CSIDriver without attach, with seLinuxMount: true.
func ftDriver(name string, mut ...func(*storagev1.CSIDriverSpec)) *storagev1.CSIDriver {
	d := &storagev1.CSIDriver{
		TypeMeta:   metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSIDriver"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired: ftBool(false),
			PodInfoOnMount: ftBool(false),
			SELinuxMount:   ftBool(true),
		},
	}
	for _, m := range mut {
		m(&d.Spec)
	}
	return d
}

// ftPV is a 1Gi PV of driver with mountOptions [noatime], bound to claim
// default/c-<name>.
func ftPV(driver, name, handle string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:     corev1.ResourceList{corev1.ResourceStorage: ftGi(1)},
			AccessModes:  modes,
			MountOptions: []string{"noatime"},
			ClaimRef:     &corev1.ObjectReference{Namespace: "default", Name: "c-" + name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle},
			},
		},
	}
}

// ftPVC is the claim bound to pv, Bound with the PV's size.
func ftPVC(pv *corev1.PersistentVolume) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "c-" + pv.Name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: pv.Spec.AccessModes,
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: ftGi(1)}},
			VolumeName:  pv.Name,
		},
		Status: corev1.PersistentVolumeClaimStatus{
			Phase:       corev1.ClaimBound,
			AccessModes: pv.Spec.AccessModes,
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: ftGi(1)},
		},
	}
}

// ftPod is pod default/<name> with one container "c" mounting each claim.
func ftPod(name, uid string, claims ...string) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:           simNode,
			ServiceAccountName: "builder",
			Containers:         []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	p.UID = types.UID(uid)
	for i, c := range claims {
		v := "v" + strconv.Itoa(i)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c},
		}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v, MountPath: "/" + v})
	}
	return p
}

// ftWithLevel sets the pod-level seLinuxOptions to {level}.
func ftWithLevel(p *corev1.Pod, level string) *corev1.Pod {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Level: level}
	return p
}

func ftPodSC(p *corev1.Pod) *corev1.PodSecurityContext {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return p.Spec.SecurityContext
}

// ftSimplePV is the common single-volume set: CSIDriver, PV pv-a (handle),
// its claim and pod p1 with pod-level level s0:c1,c2.
func ftSimplePV(tb testing.TB, driver *storagev1.CSIDriver, handle string, modes []corev1.PersistentVolumeAccessMode,
	mutPV func(*corev1.PersistentVolume), mutPod func(*corev1.Pod)) string {
	tb.Helper()
	pv := ftPV(driver.Name, "pv-a", handle, modes...)
	if mutPV != nil {
		mutPV(pv)
	}
	pod := ftWithLevel(ftPod("p1", ftUID1, "c-pv-a"), "s0:c1,c2")
	if mutPod != nil {
		mutPod(pod)
	}
	return ftYAML(tb, driver, pv, ftPVC(pv), pod)
}

// ---------------------------------------------------------------------------
// Running against the mock driver

type ftMockRun struct {
	r     simResult
	calls []mocklog.Call
	root  string
	log   string
}

func (m ftMockRun) String() string {
	return m.r.String() + "\n--- mock log:\n" + readFile(m.log)
}

// ftStopMock stops the mock (so its log is complete) and parses its log.
func ftStopMock(tb testing.TB, d *driverProc) []mocklog.Call {
	tb.Helper()
	d.Stop()
	return ftParseMockLog(tb, d.Log)
}

func ftParseMockLog(tb testing.TB, file string) []mocklog.Call {
	tb.Helper()
	f, err := os.Open(file)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	cs, err := mocklog.Parse(f)
	if err != nil {
		tb.Fatalf("mock log: %v", err)
	}
	return cs
}

// ftRunMock starts a fresh mock (--disable-attach plus mockFlags), runs the
// simulator on manifests to completion (stats off unless args turn them on,
// on a simulated SELinux node), and checks that nothing is left.
func ftRunMock(t *testing.T, mockFlags []string, manifests string, args ...string) ftMockRun {
	t.Helper()
	work := workDir(t)
	mock := startMock(t, work, append([]string{"--disable-attach"}, mockFlags...)...)
	root := filepath.Join(work, "root")
	mf := writeFile(t, work, "manifests.yaml", manifests)
	// An SELinux node, simulated: the rules under test need one, whatever
	// the host running the tests has (args may say --selinux=false).
	all := append([]string{"run", "-f", mf, "--endpoint", "unix://" + mock.Sock, "--root-dir", root,
		"--node-name", simNode, "-o", "json", "--volume-stats-agg-period", "0", "--selinux"}, args...)
	r := runSim(t, all...)
	cs := ftStopMock(t, mock)
	assertNothingLeft(t, root, work)
	return ftMockRun{r: r, calls: cs, root: root, log: mock.Log}
}

// ftMountFlags is volume_capability.mount.mount_flags of a logged request.
func ftMountFlags(c mocklog.Call) []string {
	arr, _ := c.Get("volume_capability", "AccessType", "Mount", "mount_flags").([]any)
	var out []string
	for _, a := range arr {
		s, _ := a.(string)
		out = append(out, s)
	}
	return out
}

// ftOnly returns the calls of one method, failing unless there are n of them.
func ftOnly(t *testing.T, m ftMockRun, method string, n int) []mocklog.Call {
	t.Helper()
	cs := mocklog.Filter(m.calls, method)
	if len(cs) != n {
		t.Fatalf("%d %s calls at the mock, want %d; methods: %v\n%s", len(cs), method, n, mockMethodsFT(m.calls), m)
	}
	for _, c := range cs {
		if !c.OK() {
			t.Errorf("%s failed at the mock: %s", method, c.Error)
		}
	}
	return cs
}

func mockMethodsFT(cs []mocklog.Call) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Method)
	}
	return out
}

// ftNodeVolumeCalls lists the stage/publish/unpublish/unstage calls in order.
func ftNodeVolumeCalls(cs []mocklog.Call) []mocklog.Call {
	return mocklog.Filter(cs, "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume")
}

func ftWantFlags(ctx string) []string {
	if ctx == "" {
		return []string{"noatime"}
	}
	return []string{"noatime", ctx}
}

// ---------------------------------------------------------------------------
// 1. SELinux and volume_mount_group against the mock driver

// TestSELinuxMockDriver mirrors Kubernetes' csi_mock SELinux tests on one
// version (1.37 unless said): the exact context="..." option in NodeStage
// and NodePublish mount_flags after the PV's mountOptions (docs/kubelet.md §6.3),
// under the conditions of 6.2; and volume_mount_group (7.1).
func TestSELinuxMockDriver(t *testing.T) {
	t.Parallel()
	type seCase struct {
		name      string
		args      []string
		mock      []string
		modes     []corev1.PersistentVolumeAccessMode
		driver    func(*storagev1.CSIDriverSpec)
		pod       func(*corev1.Pod)
		wantCtx   string         // the exact option; "" = none
		wantCtxRe *regexp.Regexp // instead of wantCtx: the option must match
		wantVMG   string         // volume_mount_group in NodeStage and NodePublish; "" = absent
	}
	staff := func(p *corev1.Pod) {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{User: "staff_u"}}
	}
	fsGroup := func(policy storagev1.FSGroupPolicy) func(*storagev1.CSIDriverSpec) {
		return func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = &policy }
	}
	withFSGroup := func(p *corev1.Pod) { ftPodSC(p).FSGroup = ftInt64(4242) }
	cases := []seCase{
		// 6.2: all conditions hold (RWOP, seLinuxMount, label, no Recursive).
		{name: "rwop-pod-level", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, wantCtx: ftCtx12},
		// 6.2 item 6 / 6.4: in 1.37 SELinuxMount is on, any access modes qualify.
		{name: "rwx-1.37", modes: []corev1.PersistentVolumeAccessMode{ftRWX}, wantCtx: ftCtx12},
		{name: "rwo-rwx-1.37", modes: []corev1.PersistentVolumeAccessMode{ftRWO, ftRWX}, wantCtx: ftCtx12},
		// 6.2 item 4 / 6.1: no seLinuxOptions, no label, no option.
		{name: "no-seLinuxOptions", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			pod: func(p *corev1.Pod) { p.Spec.SecurityContext = nil }},
		// 6.2 item 3: the CSIDriver must have seLinuxMount: true (14.2 defaults it to false).
		{name: "driver-seLinuxMount-false", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			driver: func(s *storagev1.CSIDriverSpec) { s.SELinuxMount = ftBool(false) }},
		{name: "driver-seLinuxMount-unset", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			driver: func(s *storagev1.CSIDriverSpec) { s.SELinuxMount = nil }},
		// 6.2 item 5: Recursive (gate SELinuxChangePolicy GA in 1.37) disables it;
		// MountOption allows it.
		{name: "recursive", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			pod: func(p *corev1.Pod) {
				r := corev1.SELinuxChangePolicyRecursive
				ftPodSC(p).SELinuxChangePolicy = &r
			}},
		{name: "recursive-rwx", modes: []corev1.PersistentVolumeAccessMode{ftRWX},
			pod: func(p *corev1.Pod) {
				r := corev1.SELinuxChangePolicyRecursive
				ftPodSC(p).SELinuxChangePolicy = &r
			}},
		{name: "mountoption-policy", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, wantCtx: ftCtx12,
			pod: func(p *corev1.Pod) {
				m := corev1.SELinuxChangePolicyMountOption
				ftPodSC(p).SELinuxChangePolicy = &m
			}},
		// 6.1 / 6.2 item 2: SELinux off on the node, no option.
		{name: "selinux-disabled", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, args: []string{"--selinux=false"}},
		// 6.1: container-level options replace the pod's struct as a whole;
		// user and level change the file label, role and type do not.
		{name: "container-replaces-pod", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			pod: func(p *corev1.Pod) {
				ftWithLevel(p, "s0:c5,c6")
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{
					User: "staff_u", Role: "staff_r", Type: "spc_t", Level: "s0:c1,c2"}}
			},
			wantCtx: `context="staff_u:object_r:container_file_t:s0:c1,c2"`},
		{name: "pod-role-type-ignored", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			pod: func(p *corev1.Pod) {
				ftPodSC(p).SELinuxOptions = &corev1.SELinuxOptions{Role: "staff_r", Type: "spc_t", Level: "s0:c1,c2"}
			},
			wantCtx: ftCtx12},
		// 6.1: no per-field merge: the pod's level is not used when the
		// container's options have none; the level is then allocated
		// (fixed here with --selinux-level).
		{name: "container-without-level", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, pod: staff,
			args: []string{"--selinux-level", "s0:c7,c8"}, wantCtx: `context="staff_u:object_r:container_file_t:s0:c7,c8"`},
		{name: "selinux-level-flag-not-over-pod-level", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			args: []string{"--selinux-level", "s0:c7,c8"}, wantCtx: ftCtx12},
		// 6.1: a missing level gets a newly allocated random MCS level
		// (go-selinux uniqMcs: "s0:c%d,c%d", two distinct categories below
		// 1024, lower first).
		{name: "random-level", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, pod: staff,
			wantCtxRe: regexp.MustCompile(`^context="staff_u:object_r:container_file_t:s0:c([0-9]+),c([0-9]+)"$`)},
		// 7.1: volume_mount_group = decimal fsGroup in NodeStage and NodePublish
		// when the driver has VOLUME_MOUNT_GROUP, whatever fsGroupPolicy says.
		{name: "vmg-file", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, mock: []string{"--volume-mount-group"},
			driver: fsGroup(storagev1.FileFSGroupPolicy), pod: withFSGroup, wantCtx: ftCtx12, wantVMG: "4242"},
		{name: "vmg-policy-none", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, mock: []string{"--volume-mount-group"},
			driver: fsGroup(storagev1.NoneFSGroupPolicy), pod: withFSGroup, wantCtx: ftCtx12, wantVMG: "4242"},
		{name: "vmg-rwx-readwriteoncewithfstype", modes: []corev1.PersistentVolumeAccessMode{ftRWX}, mock: []string{"--volume-mount-group"},
			driver: fsGroup(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), pod: withFSGroup, wantCtx: ftCtx12, wantVMG: "4242"},
		{name: "no-vmg-capability", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			driver: fsGroup(storagev1.FileFSGroupPolicy), pod: withFSGroup, wantCtx: ftCtx12},
		{name: "vmg-no-fsgroup", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, mock: []string{"--volume-mount-group"},
			driver: fsGroup(storagev1.FileFSGroupPolicy), wantCtx: ftCtx12},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drv := ftDriver(mockDriver)
			if tc.driver != nil {
				tc.driver(&drv.Spec)
			}
			mf := ftSimplePV(t, drv, "1", tc.modes, nil, tc.pod)
			m := ftRunMock(t, tc.mock, mf, tc.args...)
			if m.r.Code != 0 {
				t.Fatalf("exit %d, want 0\n%s", m.r.Code, m)
			}
			stage := ftOnly(t, m, "NodeStageVolume", 1)[0]
			publish := ftOnly(t, m, "NodePublishVolume", 1)[0]
			for _, c := range []mocklog.Call{stage, publish} {
				got := ftMountFlags(c)
				if tc.wantCtxRe != nil {
					if len(got) != 2 || got[0] != "noatime" || !tc.wantCtxRe.MatchString(got[1]) {
						t.Errorf("%s mount_flags %q, want [noatime <%s>] (docs/kubelet.md §6.1, §6.3)", c.Method, got, tc.wantCtxRe)
					} else {
						sm := tc.wantCtxRe.FindStringSubmatch(got[1])
						a, _ := strconv.Atoi(sm[1])
						b, _ := strconv.Atoi(sm[2])
						if !(a < b && b < 1024) {
							t.Errorf("random MCS level c%d,c%d: want two distinct categories in 0..1023, lower first", a, b)
						}
					}
				} else if want := ftWantFlags(tc.wantCtx); !reflect.DeepEqual(got, want) {
					t.Errorf("%s mount_flags\n got %q\nwant %q (docs/kubelet.md §6.2, §6.3)", c.Method, got, want)
				}
				if got := c.Str("volume_capability", "AccessType", "Mount", "volume_mount_group"); got != tc.wantVMG {
					t.Errorf("%s volume_mount_group %q, want %q (docs/kubelet.md §7.1)", c.Method, got, tc.wantVMG)
				}
			}
			// One label per volume: NodeStage and NodePublish get the same one (6.3).
			if !reflect.DeepEqual(ftMountFlags(stage), ftMountFlags(publish)) {
				t.Errorf("NodeStage and NodePublish mount_flags differ: %q vs %q", ftMountFlags(stage), ftMountFlags(publish))
			}
		})
	}
}

// TestSELinuxInlineVolume: inline volumes never get the option and carry
// no mount flags at all (docs/kubelet.md §2, §6.3, §8), even with seLinuxMount and
// seLinuxOptions; there is no NodeStage (2).
func TestSELinuxInlineVolume(t *testing.T) {
	t.Parallel()
	drv := ftDriver(mockDriver, func(s *storagev1.CSIDriverSpec) {
		s.PodInfoOnMount = ftBool(true) // the mock accepts an unknown id only with ephemeral=true
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}
	})
	pod := ftWithLevel(ftPod("p1", ftUID1), "s0:c1,c2")
	pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
		CSI: &corev1.CSIVolumeSource{Driver: mockDriver},
	}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	m := ftRunMock(t, nil, ftYAML(t, drv, pod))
	if m.r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", m.r.Code, m)
	}
	ftOnly(t, m, "NodeStageVolume", 0)
	p := ftOnly(t, m, "NodePublishVolume", 1)[0]
	if v := p.Get("volume_capability", "AccessType", "Mount", "mount_flags"); v != nil {
		t.Errorf("inline NodePublish mount_flags %v, want none (docs/kubelet.md §2, §6.3)", v)
	}
	if got, want := p.Str("target_path"), targetPath(m.root, ftUID1, "scratch"); got != want {
		t.Errorf("target_path %s, want %s", got, want)
	}
}

// TestSELinuxVolDataJSON: the label is recorded as seLinuxMountContext in
// both vol_data.json files when the option was added, and not otherwise
// (docs/kubelet.md §1.6, §6.3). Read while the pod is held.
func TestSELinuxVolDataJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		version string
		label   string
	}{
		{"rwo-1.37", "1.37", ftLabel12},
		{"rwo-1.36", "1.36", ""}, // 6.4: no SELinuxMount before 1.37, RWO gets no option
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			mock := startMock(t, work, "--disable-attach")
			root := filepath.Join(work, "root")
			mf := writeFile(t, work, "m.yaml", ftSimplePV(t, ftDriver(mockDriver), "2", []corev1.PersistentVolumeAccessMode{ftRWO}, nil, nil))
			sim := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+mock.Sock, "--root-dir", root, "--node-name", simNode,
				"--kubelet-version", tc.version, "--hold", "2s", "--volume-stats-agg-period", "0", "-o", "json", "--selinux")
			pubFile := filepath.Join(filepath.Dir(targetPath(root, ftUID1, "pv-a")), "vol_data.json")
			stFile := filepath.Join(filepath.Dir(stagingPath(root, mockDriver, "2")), "vol_data.json")
			pub := map[string]string{
				"specVolID": "pv-a", "volumeHandle": "2", "driverName": mockDriver, "nodeName": simNode,
				"volumeLifecycleMode": "Persistent", "attachmentID": attachmentName("2", mockDriver, simNode),
			}
			st := map[string]string{"volumeHandle": "2", "driverName": mockDriver}
			if tc.label != "" {
				pub["seLinuxMountContext"] = tc.label
				st["seLinuxMountContext"] = tc.label
			}
			ftWaitFileContent(t, pubFile, volDataJSON(pub), sim.exited)
			ftWaitFileContent(t, stFile, volDataJSON(st), sim.exited)
			r := sim.wait(t, 30*time.Second)
			ftStopMock(t, mock)
			wantCode(t, r, 0)
			assertNothingLeft(t, root, work)
		})
	}
}

// ftWaitFileContent waits until file has exactly want (it is written before
// the RPC, the test polls while the pod is held).
func ftWaitFileContent(t *testing.T, file, want string, exited <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	got := ""
	for {
		b, err := os.ReadFile(file)
		got = string(b)
		if err == nil && got == want {
			return
		}
		select {
		case <-exited:
			t.Errorf("%s: the run ended; last content %q, want %q", file, got, want)
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Errorf("%s:\n got %q\nwant %q", file, got, want)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSELinuxContextNotAppliedWarning: the reference driver ignores
// context= (a bind mount), so `run` must warn that the driver did not apply
// the context it was sent (issue 4, item 3).
func TestSELinuxContextNotAppliedWarning(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	mf := writeFile(t, work, "m.yaml", ftSimplePV(t, ftDriver(refDriverName), "vol-se", []corev1.PersistentVolumeAccessMode{ftRWOP}, nil, nil))
	r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"--volume-stats-agg-period", "0", "-o", "json", "--selinux")
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)
	lines := parseTrace(t, r)
	var published bool
	for _, c := range calls(lines) {
		if c.Method == "NodePublishVolume" {
			published = true
			mount, _ := c.Request["volume_capability"].(map[string]any)["mount"].(map[string]any)
			if ok, diff := jsonEqual(mount["mount_flags"], []string{"noatime", ftCtx12}); !ok {
				t.Errorf("NodePublish mount_flags (docs/kubelet.md §6.3):\n%s", diff)
			}
		}
	}
	if !published {
		t.Fatalf("no NodePublishVolume in the trace\n%s", r)
	}
	var warned bool
	for _, l := range lines {
		if l.Kind == "step" && l.Level == "warning" && strings.Contains(l.Text, "context") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning that the driver did not apply the SELinux context it was sent\n%s", r)
	}
}

// ---------------------------------------------------------------------------
// Several pods on one volume

// TestSELinuxTwoPodsOneVolume: pods are mounted in order and torn down in
// reverse; a shared volume is staged once and unstaged after the last
// NodeUnpublish (docs/kubelet.md §12: NodeUnstage only when no pod mounts remain);
// one SELinux label per volume, a second pod with another label fails with
// the kubelet's error when the SELinux mount applies, and is only a metric
// otherwise (6.2); RWOP admits one pod on the node (8).
func TestSELinuxTwoPodsOneVolume(t *testing.T) {
	t.Parallel()
	type twoCase struct {
		name     string
		version  string
		modes    []corev1.PersistentVolumeAccessMode
		level2   string
		both     func(*corev1.Pod) // applied to both pods instead of levels
		args     []string
		wantCtx  string         // option in both publishes; "" none
		ctxRe    *regexp.Regexp // instead of wantCtx
		wantErr  []string
		wantCode int
	}
	staff := func(p *corev1.Pod) { ftPodSC(p).SELinuxOptions = &corev1.SELinuxOptions{User: "staff_u"} }
	randomCtx := regexp.MustCompile(`^context="staff_u:object_r:container_file_t:s0:c[0-9]+,c[0-9]+"$`)
	cases := []twoCase{
		{name: "same-label-rwx", version: "1.37", modes: []corev1.PersistentVolumeAccessMode{ftRWX}, level2: "s0:c1,c2", wantCtx: ftCtx12},
		{name: "same-label-rwo", version: "1.37", modes: []corev1.PersistentVolumeAccessMode{ftRWO}, level2: "s0:c1,c2", wantCtx: ftCtx12},
		{name: "different-labels-rwx", version: "1.37", modes: []corev1.PersistentVolumeAccessMode{ftRWX}, level2: "s0:c3,c4", wantCtx: ftCtx12,
			// The existing label first, then the new pod's (desired_state_of_world.go AddPodToVolume).
			wantErr: []string{`conflicting SELinux labels of volume pv-shared: "` + ftLabel12 + `" and "` + ftLabel34 + `"`}, wantCode: 2},
		// 6.2: without the SELinux mount (RWX before 1.37) a conflict is only a metric.
		{name: "different-labels-rwx-1.36", version: "1.36", modes: []corev1.PersistentVolumeAccessMode{ftRWX}, level2: "s0:c3,c4"},
		{name: "rwop", version: "1.37", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, level2: "s0:c1,c2", wantCtx: ftCtx12,
			wantErr: []string{ftRWOPError}, wantCode: 2},
		{name: "rwop-no-selinux", version: "1.37", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			wantErr: []string{ftRWOPError}, wantCode: 2},
		// 6.1: a missing level is a newly allocated random level, per pod:
		// two pods without a level have different labels (6.2: the error).
		{name: "random-levels-conflict", version: "1.37", modes: []corev1.PersistentVolumeAccessMode{ftRWX}, both: staff, ctxRe: randomCtx,
			wantErr: []string{`conflicting SELinux labels of volume pv-shared: "staff_u:object_r:container_file_t:s0:c`}, wantCode: 2},
		{name: "fixed-level-no-conflict", version: "1.37", modes: []corev1.PersistentVolumeAccessMode{ftRWX}, both: staff,
			args: []string{"--selinux-level", "s0:c7,c8"}, wantCtx: `context="staff_u:object_r:container_file_t:s0:c7,c8"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drv := ftDriver(mockDriver)
			pv := ftPV(mockDriver, "pv-shared", "1", tc.modes...)
			p1 := ftPod("p1", ftUID1, "c-pv-shared")
			p2 := ftPod("p2", ftUID2, "c-pv-shared")
			if tc.level2 != "" {
				ftWithLevel(p1, "s0:c1,c2")
				ftWithLevel(p2, tc.level2)
			}
			if tc.both != nil {
				tc.both(p1)
				tc.both(p2)
			}
			m := ftRunMock(t, nil, ftYAML(t, drv, pv, ftPVC(pv), p1, p2), append([]string{"--kubelet-version", tc.version}, tc.args...)...)
			if m.r.Code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s", m.r.Code, tc.wantCode, m)
			}
			t1 := targetPath(m.root, ftUID1, "pv-shared")
			t2 := targetPath(m.root, ftUID2, "pv-shared")
			st := stagingPath(m.root, mockDriver, "1")
			type step struct{ method, path string }
			want := []step{{"NodeStageVolume", st}, {"NodePublishVolume", t1}, {"NodePublishVolume", t2},
				{"NodeUnpublishVolume", t2}, {"NodeUnpublishVolume", t1}, {"NodeUnstageVolume", st}}
			if len(tc.wantErr) > 0 {
				t.Logf("error: %s", oneLineError(t, m.r, tc.wantErr...))
				// The second pod is refused before any call for it; the first
				// is torn down.
				want = []step{{"NodeStageVolume", st}, {"NodePublishVolume", t1}, {"NodeUnpublishVolume", t1}, {"NodeUnstageVolume", st}}
			}
			var got []step
			for _, c := range ftNodeVolumeCalls(m.calls) {
				p := c.Str("target_path")
				if p == "" {
					p = c.Str("staging_target_path")
				}
				got = append(got, step{c.Method, p})
				if !c.OK() {
					t.Errorf("%s failed at the mock: %s", c.Method, c.Error)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("stage/publish/unpublish/unstage calls:\n got %v\nwant %v\n%s", got, want, m)
			}
			for _, c := range mocklog.Filter(m.calls, "NodeStageVolume", "NodePublishVolume") {
				got := ftMountFlags(c)
				if tc.ctxRe != nil {
					if len(got) != 2 || got[0] != "noatime" || !tc.ctxRe.MatchString(got[1]) {
						t.Errorf("%s %s mount_flags %q, want [noatime <%s>]", c.Method, c.Str("target_path"), got, tc.ctxRe)
					}
				} else if !reflect.DeepEqual(got, ftWantFlags(tc.wantCtx)) {
					t.Errorf("%s %s mount_flags %q, want %q (docs/kubelet.md §6.2, §6.3)", c.Method, c.Str("target_path"), got, ftWantFlags(tc.wantCtx))
				}
			}
		})
	}
}

// TestSELinuxMultipleLabelsInPod: two containers of one pod that use the
// volume with different effective labels: `multiple SELinux labels found`
// (docs/kubelet.md §6.1), and no mount of the volume.
func TestSELinuxMultipleLabelsInPod(t *testing.T) {
	t.Parallel()
	pod := ftWithLevel(ftPod("p1", ftUID1, "c-pv-a"), "s0:c1,c2")
	c2 := pod.Spec.Containers[0]
	c2.Name = "other"
	c2.SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c3,c4"}}
	pod.Spec.Containers = append(pod.Spec.Containers, c2)
	pv := ftPV(mockDriver, "pv-a", "1", ftRWOP)
	m := ftRunMock(t, nil, ftYAML(t, ftDriver(mockDriver), pv, ftPVC(pv), pod))
	if m.r.Code != 2 {
		t.Fatalf("exit %d, want 2\n%s", m.r.Code, m)
	}
	t.Logf("error: %s", oneLineError(t, m.r, "multiple SELinux labels found"))
	ftOnly(t, m, "NodePublishVolume", 0)
}

// ---------------------------------------------------------------------------
// 2. requiresRepublish

// TestRepublishMock: with requiresRepublish, NodePublish again at each sync,
// byte for byte the same request, and no NodeStage on republish (docs/kubelet.md
// §5, §21.9); without it, one NodePublish. The cadence is a fixed
// --republish-period, or --sync-frequency plus up to 50% jitter
// (wait.Jitter(resyncInterval, 0.5), docs/kubelet.md §5).
func TestRepublishMock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		republish      *bool
		args           []string
		min, max       int
		minGap, maxGap time.Duration // between consecutive NodePublish calls
	}{
		// 1, the early republish, one per second of the 3.5 s hold. The
		// upper bounds of the gaps leave room for a loaded CI machine (2
		// cores, the whole suite in parallel): a timer fires late, never
		// early.
		{"requiresRepublish", ftBool(true), []string{"--republish-period", "1s"}, 3, 6, 900 * time.Millisecond, 2000 * time.Millisecond},
		// The early one, then every 1 s to 1.5 s: 2 or 3 republishes in 3.5 s.
		{"requiresRepublish-sync-frequency", ftBool(true), []string{"--sync-frequency", "1s"}, 3, 5, 900 * time.Millisecond, 2400 * time.Millisecond},
		{"no-requiresRepublish", ftBool(false), []string{"--republish-period", "1s"}, 1, 1, 0, 0},
		{"requiresRepublish-unset", nil, []string{"--republish-period", "1s"}, 1, 1, 0, 0}, // 14.2: defaults to false
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drv := ftDriver(mockDriver, func(s *storagev1.CSIDriverSpec) {
				s.RequiresRepublish = tc.republish
				s.PodInfoOnMount = ftBool(true)
			})
			pv := ftPV(mockDriver, "pv-a", "1", ftRWO)
			m := ftRunMock(t, nil, ftYAML(t, drv, pv, ftPVC(pv), ftPod("p1", ftUID1, "c-pv-a")),
				append(tc.args, "--hold", "3500ms", "--volume-stats-agg-period", "0")...)
			if m.r.Code != 0 {
				t.Fatalf("exit %d, want 0\n%s", m.r.Code, m)
			}
			pubs := mocklog.Filter(m.calls, "NodePublishVolume")
			if len(pubs) < tc.min || len(pubs) > tc.max {
				t.Errorf("%d NodePublishVolume calls, want %d..%d (docs/kubelet.md §5)\n%s", len(pubs), tc.min, tc.max, m)
			}
			ftOnly(t, m, "NodeStageVolume", 1)
			ftOnly(t, m, "NodeUnpublishVolume", 1)
			ftOnly(t, m, "NodeUnstageVolume", 1)
			var first string
			for i, p := range pubs {
				if !p.OK() {
					t.Errorf("NodePublish %d failed: %s", i+1, p.Error)
				}
				var raw struct{ Request json.RawMessage }
				if err := json.Unmarshal([]byte(p.Raw), &raw); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = string(raw.Request)
				} else if string(raw.Request) != first {
					t.Errorf("NodePublish %d differs from the first (docs/kubelet.md §21.9: byte for byte):\n got %s\nwant %s", i+1, raw.Request, first)
				}
			}
			// The trace shows each republish: as many NodePublish calls as the driver saw.
			tp := ftTraceMethod(parseTrace(t, m.r), "NodePublishVolume")
			if len(tp) != len(pubs) {
				t.Errorf("trace has %d NodePublishVolume calls, the mock saw %d", len(tp), len(pubs))
			}
			for i := 1; i < len(tp); i++ {
				gap := tp[i].Time.Sub(tp[i-1].Time)
				if i == 1 {
					// The early republish (1.37: the pod sync that follows
					// the containers' start, at once) comes before any period.
					if gap >= tc.minGap {
						t.Errorf("NodePublish 2 came %v after the first, want the early republish, under %v (docs/kubelet.md §5)", gap, tc.minGap)
					}
					continue
				}
				if gap < tc.minGap || gap > tc.maxGap {
					t.Errorf("NodePublish %d came %v after the previous one, want %v..%v (docs/kubelet.md §5)", i+1, gap, tc.minGap, tc.maxGap)
				}
			}
			// Nothing between the last republish and teardown but unpublish/unstage.
			vc := ftNodeVolumeCalls(m.calls)
			if len(vc) < 3 || vc[0].Method != "NodeStageVolume" || vc[len(vc)-2].Method != "NodeUnpublishVolume" || vc[len(vc)-1].Method != "NodeUnstageVolume" {
				t.Errorf("volume calls %v: want NodeStage, NodePublish..., NodeUnpublish, NodeUnstage", mockMethodsFT(vc))
			}
		})
	}
}

// TestVersionRepublishFailure: a republish that fails with a final error
// (the mock answers AlreadyExists to a repeated read-only NodePublish, see
// its README) removes the target dir, vol_data.json and the volume dir up to
// 1.35, and keeps them from 1.36 (docs/kubelet.md §1.7, §5). The volume stays
// mounted: teardown still unpublishes and unstages, nothing is left.
// republishHold is how long the pod of the failed-republish test runs:
// long enough that a loaded machine still sees the first failed republish
// well before the teardown.
const republishHold = 10 * time.Second

func TestVersionRepublishFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		kept    bool
	}{{"1.30", false}, {"1.33", false}, {"1.35", false}, {"1.36", true}, {"1.37", true}} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			mock := startMock(t, work, "--disable-attach")
			root := filepath.Join(work, "root")
			drv := ftDriver(mockDriver, func(s *storagev1.CSIDriverSpec) { s.RequiresRepublish = ftBool(true) })
			pv := ftPV(mockDriver, "pv-a", "1", ftRWO)
			pod := ftPod("p1", ftUID1, "c-pv-a")
			pod.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly = true
			mf := writeFile(t, work, "m.yaml", ftYAML(t, drv, pv, ftPVC(pv), pod))
			started := time.Now()
			sim := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+mock.Sock, "--root-dir", root, "--node-name", simNode,
				"--kubelet-version", tc.version, "--republish-period", "500ms", "--hold", republishHold.String(), "--volume-stats-agg-period", "0", "-o", "json")
			volDir := filepath.Dir(targetPath(root, ftUID1, "pv-a"))
			// Wait for the first failed republish at the mock.
			deadline := time.Now().Add(10 * time.Second)
			for {
				failed := false
				for _, c := range mocklog.Filter(ftParseMockLog(t, mock.Log), "NodePublishVolume") {
					if !c.OK() {
						failed = true
					}
				}
				if failed {
					break
				}
				select {
				case <-sim.exited:
					t.Fatalf("the run ended before a republish failed; mock log:\n%s", readFile(mock.Log))
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("no failed republish after 10s; mock log:\n%s", readFile(mock.Log))
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Up to 1.35 the cleanup follows the failure: poll until the
			// volume dir is gone (a later republish writes it again). From
			// 1.36 it must stay for the rest of the hold.
			volData := filepath.Join(volDir, "vol_data.json")
			// Look for 800ms, ending well before the hold does (the first
			// republish fails at about 500ms; a loaded machine may take
			// seconds longer to see it, hence the long hold).
			deadline = time.Now().Add(800 * time.Millisecond)
			if time.Since(started) > republishHold-1500*time.Millisecond {
				t.Fatalf("the first republish failed too late (%v after the start) to watch the target before teardown", time.Since(started))
			}
			sawGone := false
			for !sawGone && time.Now().Before(deadline) {
				if _, err := os.Stat(volData); err != nil {
					sawGone = true
				}
				time.Sleep(2 * time.Millisecond)
			}
			if sawGone == tc.kept {
				t.Errorf("%s: after a failed republish the volume dir was removed=%v, want %v (docs/kubelet.md §1.7: kept from 1.36); %s",
					tc.version, sawGone, !tc.kept, ftTreeOrErr(volDir))
			}
			r := sim.wait(t, 30*time.Second)
			if !tc.kept {
				// The run names `cleanup`; it must then finish the job the
				// kubelet could not: unpublish from the journal's copy of
				// vol_data.json, then unstage, and leave nothing.
				before := len(ftParseMockLog(t, mock.Log))
				cr := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+mock.Sock, "--node-name", simNode, "-o", "json")
				if cr.Code != 0 {
					t.Errorf("cleanup: exit %d, want 0\n%s", cr.Code, cr)
				}
				after := ftNodeVolumeCalls(ftParseMockLog(t, mock.Log)[before:])
				if got := mockMethodsFT(after); strings.Join(got, ",") != "NodeUnpublishVolume,NodeUnstageVolume" {
					t.Errorf("cleanup's volume calls %v, want NodeUnpublishVolume, NodeUnstageVolume\n%s", got, cr)
				}
				for _, c := range after {
					if c.Method == "NodeUnpublishVolume" && !strings.Contains(c.Raw, targetPath(root, ftUID1, "pv-a")) {
						t.Errorf("cleanup unpublished another path: %s", c.Raw)
					}
				}
				assertNothingLeft(t, root, work)
			}
			cs := ftStopMock(t, mock)
			if r.Code != 1 {
				t.Errorf("exit %d, want 1 (the driver failed a call)\n%s", r.Code, r)
			}
			vc := ftNodeVolumeCalls(cs)
			ftCheckN(t, cs, "NodeStageVolume", 1)
			if !tc.kept {
				// Up to 1.35 the failed republish took vol_data.json with
				// it, so the kubelet can build no unmounter and never
				// unpublishes (csiPlugin.NewUnmounter; docs/kubelet.md
				// §1.7): the simulator is stuck as the kubelet is, keeps
				// the volume as it is and says so (the one unpublish is
				// cleanup's, above).
				ftCheckN(t, cs, "NodeUnpublishVolume", 1)
				if !strings.Contains(r.Stdout, "UnmountVolume.NewUnmounter failed") {
					t.Errorf("the trace does not say the teardown could build no unmounter:\n%s", r.Stdout)
				}
				if !strings.Contains(r.Stderr, "csi-kubelet-sim cleanup --root-dir "+root) {
					t.Errorf("the error does not name the cleanup command:\n%s", r.Stderr)
				}
				return
			}
			assertNothingLeft(t, root, work)
			if len(vc) < 2 || vc[len(vc)-2].Method != "NodeUnpublishVolume" || vc[len(vc)-1].Method != "NodeUnstageVolume" {
				t.Errorf("teardown: volume calls %v, want ... NodeUnpublishVolume, NodeUnstageVolume", mockMethodsFT(vc))
			}
		})
	}
}

func ftCheckN(t *testing.T, cs []mocklog.Call, method string, n int) {
	t.Helper()
	if got := len(mocklog.Filter(cs, method)); got != n {
		t.Errorf("%d %s calls, want %d", got, method, n)
	}
}

func ftTreeOrErr(dir string) string {
	var out []string
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		out = append(out, p)
		return err
	})
	if err != nil {
		return err.Error()
	}
	return strings.Join(out, " ")
}

func ftTraceMethod(lines []traceLine, method string) []traceLine {
	var out []traceLine
	for _, c := range calls(lines) {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// ftCountLogLines counts the lines of a file that contain s.
func ftCountLogLines(file, s string) int {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			n++
		}
	}
	return n
}

// ftRefManifests: CSIDriver of the reference driver with mut, PV pv-r of
// handle with fsType and modes, its claim, and pod p1 (fsGroup 4242 unless
// mutPod changes it).
func ftRefManifests(tb testing.TB, handle, fsType string, modes []corev1.PersistentVolumeAccessMode,
	mut func(*storagev1.CSIDriverSpec), mutPod func(*corev1.Pod)) string {
	tb.Helper()
	drv := ftDriver(refDriverName, func(s *storagev1.CSIDriverSpec) { s.SELinuxMount = ftBool(false) })
	if mut != nil {
		mut(&drv.Spec)
	}
	pv := ftPV(refDriverName, "pv-r", handle, modes...)
	pv.Spec.CSI.FSType = fsType
	pod := ftPod("p1", ftUID1, "c-pv-r")
	ftPodSC(pod).FSGroup = ftInt64(4242)
	if mutPod != nil {
		mutPod(pod)
	}
	return ftYAML(tb, drv, pv, ftPVC(pv), pod)
}

// TestRepublishInterrupt: SIGINT during the republish loop (reference
// driver, real mounts): teardown done, nothing left, exit 0, for it ends
// --hold forever as meant, even with a republish cut short (README, "Exit
// codes"; issue 4 "including an interrupted republish loop").
func TestRepublishInterrupt(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work, "--v", "2") // every call in its log
	root := filepath.Join(work, "root")
	mf := writeFile(t, work, "m.yaml", ftRefManifests(t, "vol-rp", "", []corev1.PersistentVolumeAccessMode{ftRWO},
		func(s *storagev1.CSIDriverSpec) { s.RequiresRepublish = ftBool(true) }, nil))
	sim := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"--hold", "forever", "--republish-period", "300ms", "--volume-stats-agg-period", "0", "-o", "json")
	target := targetPath(root, ftUID1, "pv-r")
	waitMounted(t, target, 10*time.Second, sim.exited)
	deadline := time.Now().Add(10 * time.Second)
	for ftCountLogLines(drv.Log, "/csi.v1.Node/NodePublishVolume request") < 3 {
		select {
		case <-sim.exited:
			t.Fatalf("the run ended during --hold forever")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 3 NodePublishVolume calls after 10s; driver log:\n%s", readFile(drv.Log))
		}
		time.Sleep(20 * time.Millisecond)
	}
	signalled := time.Now()
	if err := sim.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := sim.wait(t, 30*time.Second)
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)
	lines := parseTrace(t, r)
	if n := len(ftTraceMethod(lines, "NodePublishVolume")); n < 3 {
		t.Errorf("%d NodePublishVolume calls in the trace, want at least 3", n)
	}
	var after []string
	for _, c := range calls(lines) {
		if c.Time.After(signalled) && (c.Method == "NodeUnpublishVolume" || c.Method == "NodeUnstageVolume") {
			after = append(after, c.Method)
			if c.Code != "OK" {
				t.Errorf("teardown call failed: %s", c.Raw)
			}
		}
	}
	if got, want := strings.Join(after, ","), "NodeUnpublishVolume,NodeUnstageVolume"; got != want {
		t.Errorf("teardown after SIGINT: got %s, want %s\n%s", got, want, r)
	}
	if s := summary(t, lines); !s.Interrupt {
		t.Errorf("summary does not say interrupted: %s", s.Raw)
	}
}

// ---------------------------------------------------------------------------
// 3. fsGroup applied by the kubelet, for real, on the reference driver

// ftEntry is the ownership of one entry of the volume.
type ftEntry struct {
	gid  uint32
	mode os.FileMode // permission bits and setgid
}

func ftStat(t *testing.T, p string) ftEntry {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatalf("stat: %v", err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return ftEntry{gid: st.Gid, mode: fi.Mode() & (os.ModePerm | os.ModeSetgid)}
}

// ftSeedVolume creates the volume's backing directory (the reference
// driver's <data-dir>/<volume id>) owned by root:0 with a file and a
// subdirectory, or with the root already as fsGroup wants it.
func ftSeedVolume(t *testing.T, work, handle string, rootRight bool) string {
	t.Helper()
	b := filepath.Join(work, "refdata", handle)
	if err := os.MkdirAll(filepath.Join(b, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		p    string
		mode os.FileMode
	}{{"f", 0o600}, {"d/g", 0o640}} {
		if err := os.WriteFile(filepath.Join(b, f.p), []byte("x"), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(b, f.p), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	chmod := func(p string, m os.FileMode) {
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	chmod(filepath.Join(b, "d"), 0o700)
	chmod(b, 0o755)
	for _, p := range []string{b, filepath.Join(b, "d"), filepath.Join(b, "f"), filepath.Join(b, "d/g")} {
		if err := os.Lchown(p, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if rootRight {
		// docs/kubelet.md §7.3 skipPermissionChange: a directory, gid = fsGroup,
		// bits include 0770, setgid set.
		if err := os.Chown(b, 0, 4242); err != nil {
			t.Fatal(err)
		}
		chmod(b, 0o770|os.ModeSetgid)
	}
	return b
}

// ftTree is the ownership of the seeded entries under dir.
func ftTree(t *testing.T, dir string) map[string]ftEntry {
	out := map[string]ftEntry{}
	for _, p := range []string{".", "f", "d", "d/g"} {
		out[p] = ftStat(t, filepath.Join(dir, p))
	}
	return out
}

// TestFSGroupRefDriver: without VOLUME_MOUNT_GROUP the kubelet changes the
// ownership itself, for real, after NodePublish, as fsGroupPolicy says
// (docs/kubelet.md §7.2): files get gid fsGroup and mode|0660, directories
// mode|0770|setgid (7.3); OnRootMismatch skips the walk when the root is
// already right.
func TestFSGroupRefDriver(t *testing.T) {
	t.Parallel()
	policy := func(p storagev1.FSGroupPolicy) func(*storagev1.CSIDriverSpec) {
		return func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = &p }
	}
	type fsCase struct {
		name      string
		fsType    string
		modes     []corev1.PersistentVolumeAccessMode
		driver    func(*storagev1.CSIDriverSpec)
		pod       func(*corev1.Pod)
		rootRight bool
		changed   bool
	}
	cases := []fsCase{
		{name: "File", modes: []corev1.PersistentVolumeAccessMode{ftRWX}, driver: policy(storagev1.FileFSGroupPolicy), changed: true},
		{name: "None", fsType: "ext4", modes: []corev1.PersistentVolumeAccessMode{ftRWO}, driver: policy(storagev1.NoneFSGroupPolicy)},
		{name: "File-no-fsGroup", modes: []corev1.PersistentVolumeAccessMode{ftRWO}, driver: policy(storagev1.FileFSGroupPolicy),
			pod: func(p *corev1.Pod) { p.Spec.SecurityContext.FSGroup = nil }},
		{name: "File-readOnly", modes: []corev1.PersistentVolumeAccessMode{ftRWO}, driver: policy(storagev1.FileFSGroupPolicy),
			pod: func(p *corev1.Pod) { p.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly = true }},
		{name: "RWOWithFSType-fstype-rwo", fsType: "ext4", modes: []corev1.PersistentVolumeAccessMode{ftRWO},
			driver: policy(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), changed: true},
		{name: "RWOWithFSType-fstype-rwop", fsType: "ext4", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			driver: policy(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), changed: true},
		{name: "RWOWithFSType-fstype-rwx-rwo", fsType: "ext4", modes: []corev1.PersistentVolumeAccessMode{ftRWX, ftRWO},
			driver: policy(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), changed: true},
		{name: "RWOWithFSType-no-fstype", modes: []corev1.PersistentVolumeAccessMode{ftRWO},
			driver: policy(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)},
		{name: "RWOWithFSType-fstype-rwx", fsType: "ext4", modes: []corev1.PersistentVolumeAccessMode{ftRWX},
			driver: policy(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)},
		// 14.2: fsGroupPolicy defaults to ReadWriteOnceWithFSType.
		{name: "default-policy-fstype-rwo", fsType: "ext4", modes: []corev1.PersistentVolumeAccessMode{ftRWO}, changed: true},
		{name: "default-policy-no-fstype", modes: []corev1.PersistentVolumeAccessMode{ftRWO}},
		// 7.3: OnRootMismatch.
		{name: "OnRootMismatch-root-right", modes: []corev1.PersistentVolumeAccessMode{ftRWO}, driver: policy(storagev1.FileFSGroupPolicy),
			pod: func(p *corev1.Pod) {
				o := corev1.FSGroupChangeOnRootMismatch
				p.Spec.SecurityContext.FSGroupChangePolicy = &o
			}, rootRight: true},
		{name: "OnRootMismatch-root-wrong", modes: []corev1.PersistentVolumeAccessMode{ftRWO}, driver: policy(storagev1.FileFSGroupPolicy),
			pod: func(p *corev1.Pod) {
				o := corev1.FSGroupChangeOnRootMismatch
				p.Spec.SecurityContext.FSGroupChangePolicy = &o
			}, changed: true},
		{name: "Always-root-right", modes: []corev1.PersistentVolumeAccessMode{ftRWO}, driver: policy(storagev1.FileFSGroupPolicy),
			pod: func(p *corev1.Pod) {
				o := corev1.FSGroupChangeAlways
				p.Spec.SecurityContext.FSGroupChangePolicy = &o
			}, rootRight: true, changed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			handle := "vol-fs"
			backing := ftSeedVolume(t, work, handle, tc.rootRight)
			before := ftTree(t, backing)
			want := before
			if tc.changed {
				// docs/kubelet.md §7.3: Lchown(-1, fsGroup); files mode|0660,
				// directories mode|0660|0110|setgid.
				want = map[string]ftEntry{
					".":   {4242, before["."].mode | 0o770 | os.ModeSetgid},
					"f":   {4242, 0o660},
					"d":   {4242, 0o770 | os.ModeSetgid},
					"d/g": {4242, 0o660},
				}
			}
			drv := startRefDriver(t, work)
			root := filepath.Join(work, "root")
			mf := writeFile(t, work, "m.yaml", ftRefManifests(t, handle, tc.fsType, tc.modes, tc.driver, tc.pod))
			sim := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
				"--hold", "2s", "--volume-stats-agg-period", "0", "-o", "json")
			target := targetPath(root, ftUID1, "pv-r")
			waitMounted(t, target, 10*time.Second, sim.exited)
			// The mounted files, while the pod runs: the walk follows
			// NodePublish, so poll for the expected state.
			var got map[string]ftEntry
			start := time.Now()
			deadline := start.Add(600 * time.Millisecond)
			for {
				got = ftTree(t, target)
				if reflect.DeepEqual(got, want) && (tc.changed || time.Since(start) > 300*time.Millisecond) {
					break
				}
				if time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ownership on the mounted volume (docs/kubelet.md §7.2, §7.3):\n got %v\nwant %v", got, want)
			}
			r := sim.wait(t, 30*time.Second)
			wantCode(t, r, 0)
			assertNothingLeft(t, root, work)
			// The same inodes, seen in the driver's backing directory afterwards.
			if got := ftTree(t, backing); !reflect.DeepEqual(got, want) {
				t.Errorf("ownership in the backing dir after the run:\n got %v\nwant %v", got, want)
			}
			// The trace says what the ownership change did (issue 4, item 4).
			var fsSteps []string
			for _, l := range parseTrace(t, r) {
				if l.Kind == "step" && l.Operation == "SetUp" && strings.HasPrefix(l.Text, "fsGroup 4242") {
					fsSteps = append(fsSteps, l.Text)
				}
			}
			switch {
			case tc.rootRight && !tc.changed:
				if len(fsSteps) != 1 || !strings.Contains(strings.ToLower(fsSteps[0]), "nothing changed") {
					t.Errorf("want one SetUp step saying that OnRootMismatch changed nothing, got %q", fsSteps)
				}
			case tc.changed:
				if len(fsSteps) != 1 {
					t.Errorf("want one SetUp step about the ownership change to 4242, got %q", fsSteps)
				}
			default:
				if len(fsSteps) != 0 {
					t.Errorf("no ownership change applies, but the trace says %q", fsSteps)
				}
			}
		})
	}
}

// TestFSGroupDelegated: with VOLUME_MOUNT_GROUP the kubelet sends
// volume_mount_group and skips its own chown; without it, it changes the
// target's group itself (docs/kubelet.md §7.1, §7.2, §21.10). The mock creates
// the target directory (root:root) and mounts nothing, so the directory
// shows what the kubelet did to it.
func TestFSGroupDelegated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		mock    []string
		wantVMG string
		wantGid uint32
	}{
		{"VOLUME_MOUNT_GROUP", []string{"--volume-mount-group"}, "4242", 0},
		{"no-VOLUME_MOUNT_GROUP", nil, "", 4242},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			mock := startMock(t, work, append([]string{"--disable-attach"}, tc.mock...)...)
			root := filepath.Join(work, "root")
			drv := ftDriver(mockDriver, func(s *storagev1.CSIDriverSpec) {
				p := storagev1.FileFSGroupPolicy
				s.FSGroupPolicy = &p
				s.SELinuxMount = ftBool(false)
			})
			pv := ftPV(mockDriver, "pv-a", "1", ftRWO)
			pod := ftPod("p1", ftUID1, "c-pv-a")
			ftPodSC(pod).FSGroup = ftInt64(4242)
			mf := writeFile(t, work, "m.yaml", ftYAML(t, drv, pv, ftPVC(pv), pod))
			sim := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+mock.Sock, "--root-dir", root, "--node-name", simNode,
				"--hold", "2s", "--volume-stats-agg-period", "0", "-o", "json")
			target := targetPath(root, ftUID1, "pv-a")
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := os.Stat(target); err == nil {
					break
				}
				select {
				case <-sim.exited:
					t.Fatalf("the run ended before the mock created %s", target)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s never created", target)
				}
				time.Sleep(5 * time.Millisecond)
			}
			var got ftEntry
			for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if got = ftStat(t, target); got.gid == tc.wantGid && tc.wantGid != 0 {
					break
				}
			}
			if got.gid != tc.wantGid {
				t.Errorf("target %s gid %d, want %d (docs/kubelet.md §7.1: the kubelet chowns only without VOLUME_MOUNT_GROUP)", target, got.gid, tc.wantGid)
			}
			r := sim.wait(t, 30*time.Second)
			cs := ftStopMock(t, mock)
			wantCode(t, r, 0)
			assertNothingLeft(t, root, work)
			for _, c := range mocklog.Filter(cs, "NodeStageVolume", "NodePublishVolume") {
				if v := c.Str("volume_capability", "AccessType", "Mount", "volume_mount_group"); v != tc.wantVMG {
					t.Errorf("%s volume_mount_group %q, want %q", c.Method, v, tc.wantVMG)
				}
			}
		})
	}
}

// TestFSGroupWalkOnRepublish: the ownership change runs on every SetUp,
// each republish included (docs/kubelet.md §5, §7.3): a file created in the
// mounted volume after the first publish gets the group at the next one.
func TestFSGroupWalkOnRepublish(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	mf := writeFile(t, work, "m.yaml", ftRefManifests(t, "vol-rw", "", []corev1.PersistentVolumeAccessMode{ftRWO},
		func(s *storagev1.CSIDriverSpec) {
			p := storagev1.FileFSGroupPolicy
			s.FSGroupPolicy = &p
			s.RequiresRepublish = ftBool(true)
		}, nil))
	sim := startSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"--hold", "3s", "--republish-period", "500ms", "--volume-stats-agg-period", "0", "-o", "json")
	target := targetPath(root, ftUID1, "pv-r")
	waitMounted(t, target, 10*time.Second, sim.exited)
	// Wait for the first walk (root gid), then add a file as root:0 0600.
	deadline := time.Now().Add(2 * time.Second)
	for ftStat(t, target).gid != 4242 {
		if time.Now().After(deadline) {
			t.Fatalf("the target's group was never set to the fsGroup: %v", ftStat(t, target))
		}
		time.Sleep(10 * time.Millisecond)
	}
	late := filepath.Join(target, "late")
	if err := os.WriteFile(late, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(late, 0o600)
	if err := os.Lchown(late, 0, 0); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(2 * time.Second)
	var got ftEntry
	for {
		got = ftStat(t, late)
		if got == (ftEntry{4242, 0o660}) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got != (ftEntry{4242, 0o660}) {
		t.Errorf("file created after the first publish: %v, want gid 4242 mode 0660 after a republish (docs/kubelet.md §7.3)", got)
	}
	r := sim.wait(t, 30*time.Second)
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)
	if n := len(ftTraceMethod(parseTrace(t, r), "NodePublishVolume")); n < 2 {
		t.Errorf("%d NodePublishVolume calls, want republishes", n)
	}
}

// ---------------------------------------------------------------------------
// 4. NodeGetVolumeStats

// TestVolumeStatsRefDriver: while held, the kubelet's stats rounds call
// NodeGetCapabilities (GET_VOLUME_STATS) then NodeGetVolumeStats with only
// volume_id and volume_path = the target, never staging_target_path
// (docs/kubelet.md §11, §21.1, §21.12). Each interval is 1x to 2x the period.
func TestVolumeStatsRefDriver(t *testing.T) {
	t.Parallel()
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	mf := writeFile(t, work, "m.yaml", ftRefManifests(t, "vol-st", "", []corev1.PersistentVolumeAccessMode{ftRWO}, nil, nil))
	r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode,
		"--hold", "2s", "--volume-stats-agg-period", "500ms", "-o", "json")
	wantCode(t, r, 0)
	assertNothingLeft(t, root, work)
	cs := calls(parseTrace(t, r))
	target := targetPath(root, ftUID1, "pv-r")
	var n int
	var publishedAt, unpublishedAt, last time.Time
	for i, c := range cs {
		switch c.Method {
		case "NodePublishVolume":
			publishedAt = c.Time
		case "NodeUnpublishVolume":
			unpublishedAt = c.Time
		case "NodeGetVolumeStats":
			n++
			if ok, diff := jsonEqual(c.Request, map[string]any{"volume_id": "vol-st", "volume_path": target}); !ok {
				t.Errorf("NodeGetVolumeStats request (docs/kubelet.md §11, §21.12):\n%s", diff)
			}
			if c.Code != "OK" {
				t.Errorf("NodeGetVolumeStats failed: %s", c.Raw)
			}
			if i == 0 || cs[i-1].Method != "NodeGetCapabilities" || cs[i-1].Asking != "GET_VOLUME_STATS" {
				t.Errorf("NodeGetVolumeStats not preceded by NodeGetCapabilities asking GET_VOLUME_STATS (docs/kubelet.md §21.1)")
			}
			if c.Time.Before(publishedAt) || publishedAt.IsZero() || !unpublishedAt.IsZero() {
				t.Errorf("NodeGetVolumeStats outside the held period: %s", c.Raw)
			}
			// docs/kubelet.md §11: each interval is 1x to 2x the period.
			if !last.IsZero() {
				// Only the lower bound: a loaded machine delays a round, never
				// brings it forward (the count below catches a period far
				// too long).
				if gap := c.Time.Sub(last); gap < 450*time.Millisecond {
					t.Errorf("NodeGetVolumeStats %v after the previous round, want 500ms..1s (docs/kubelet.md §11)", gap)
				}
			}
			last = c.Time
		}
	}
	// 2 s held, rounds every 0.5-1 s: at least one, at most 4 (+1 slack).
	if n < 1 || n > 5 {
		t.Errorf("%d NodeGetVolumeStats calls in a 2s hold with a 500ms period, want 1..5\n%s", n, r)
	}
}

// TestVolumeStatsWithoutCapability: without GET_VOLUME_STATS no
// NodeGetVolumeStats is sent (docs/kubelet.md §11).
func TestVolumeStatsWithoutCapability(t *testing.T) {
	t.Parallel()
	pv := ftPV(mockDriver, "pv-a", "1", ftRWO)
	m := ftRunMock(t, []string{"--disable-get-volume-stats"}, ftYAML(t, ftDriver(mockDriver), pv, ftPVC(pv), ftPod("p1", ftUID1, "c-pv-a")),
		"--hold", "1s", "--volume-stats-agg-period", "300ms")
	if m.r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", m.r.Code, m)
	}
	ftOnly(t, m, "NodeGetVolumeStats", 0)
	ftOnly(t, m, "NodePublishVolume", 1)
}

// ---------------------------------------------------------------------------
// 5. NodeExpandVolume

// TestExpandMock: --expand-to 5Gi makes the PV bigger than the claim's
// status, so the kubelet calls NodeExpandVolume after SetUp with
// volume_path = target, staging_target_path = globalmount, required_bytes,
// the PV's mountOptions without the SELinux option, and the
// nodeExpandSecretRef (docs/kubelet.md §6.3, §8, §9, §11); and once more,
// the same request, as the reconciler's in-use expansion (§15.4).
func TestExpandMock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mock []string
		mode float64
	}{
		{"rwop", nil, modeSNW}, // 8: RWOP -> SINGLE_NODE_WRITER
		{"rwop-snmw", []string{"--single-node-multi-writer"}, modeSNSW}, // 8: -> SINGLE_NODE_SINGLE_WRITER
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			secret := &corev1.Secret{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{Name: "expand-creds", Namespace: "storage"},
				StringData: map[string]string{"user": "resizer"},
			}
			drv := ftDriver(mockDriver)
			pv := ftPV(mockDriver, "pv-a", "1", ftRWOP)
			pv.Spec.CSI.FSType = "ext4"
			pv.Spec.CSI.NodeExpandSecretRef = &corev1.SecretReference{Name: "expand-creds", Namespace: "storage"}
			pod := ftWithLevel(ftPod("p1", ftUID1, "c-pv-a"), "s0:c1,c2")
			m := ftRunMock(t, append([]string{"--node-expansion"}, tc.mock...), ftYAML(t, drv, secret, pv, ftPVC(pv), pod),
				"--expand-to", "5Gi")
			if m.r.Code != 0 {
				t.Fatalf("exit %d, want 0\n%s", m.r.Code, m)
			}
			want := obj{
				"volume_id":           "1",
				"volume_path":         targetPath(m.root, ftUID1, "pv-a"),
				"staging_target_path": stagingPath(m.root, mockDriver, "1"),
				"capacity_range":      obj{"required_bytes": 5368709120},
				"volume_capability":   mountCap(obj{"fs_type": "ext4", "mount_flags": []any{"noatime"}}, tc.mode),
				"secrets":             obj{"user": "resizer"},
			}
			for _, ex := range ftOnly(t, m, "NodeExpandVolume", 2) {
				if ok, diff := jsonEqual(ex.Request, want); !ok {
					t.Errorf("NodeExpandVolume request (docs/kubelet.md §11):\n%s", diff)
				}
			}
			// The SELinux option does apply to this volume (6.2): stage and publish carry it.
			for _, c := range mocklog.Filter(m.calls, "NodeStageVolume", "NodePublishVolume") {
				if got := ftMountFlags(c); !reflect.DeepEqual(got, ftWantFlags(ftCtx12)) {
					t.Errorf("%s mount_flags %q, want %q", c.Method, got, ftWantFlags(ftCtx12))
				}
			}
			// Order: after NodePublish, before NodeUnpublish (expandVolumeDuringMount,
			// then the in-use expansion).
			var order []string
			for _, c := range mocklog.Filter(m.calls, "NodePublishVolume", "NodeExpandVolume", "NodeUnpublishVolume") {
				order = append(order, c.Method)
			}
			if got, want := strings.Join(order, ","), "NodePublishVolume,NodeExpandVolume,NodeExpandVolume,NodeUnpublishVolume"; got != want {
				t.Errorf("order %s, want %s", got, want)
			}
		})
	}
}

// TestExpandByClaimStatus: without --expand-to, the kubelet expands when
// the claim's status.capacity is below the PV's capacity (docs/kubelet.md §11).
// With RecoverVolumeExpansionFailure (alpha off in 1.30, beta on 1.32, GA
// 1.34) a claim whose resizer records allocatedResources is expanded only
// while status.allocatedResourceStatuses["storage"] is NodeResizePending or
// NodeResizeInProgress (11). Where docs/kubelet.md is silent, the Kubernetes
// source decides (checkForRecoveryFromExpansion in operation_generator.go):
// a claim with neither allocatedResources nor a resize status comes from an
// older resizer and takes the legacy path (expand to the PV's capacity) on
// every version; from 1.31 a claim with allocatedResources takes the new
// path even with the gate off. The PV is 5Gi, and so are the claim's
// request and allocatedResources, so the new size is 5Gi on either path.
// The legacy path expands twice: at mount and in use (§15.4); the new path
// once, the in-use pass finding the claim grown.
func TestExpandByClaimStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		version   string
		statusCap int64 // Gi
		allocated bool  // status.allocatedResources set (a current resizer)
		resize    corev1.ClaimResourceStatus
		expand    int // NodeExpandVolume calls
		gates     string
	}{
		{"allocated-no-resize-status/1.30", "1.30", 1, true, "", 2, ""}, // gate off in 1.30: legacy path
		{"allocated-no-resize-status/1.33", "1.33", 1, true, "", 0, ""},
		{"allocated-no-resize-status/1.37", "1.37", 1, true, "", 0, ""},
		{"allocated-no-resize-status/1.33/RecoverVolumeExpansionFailure=false", "1.33", 1, true, "", 0, "RecoverVolumeExpansionFailure=false"},
		{"older-resizer/1.33", "1.33", 1, false, "", 2, ""},
		{"older-resizer/1.37", "1.37", 1, false, "", 2, ""},
		{"NodeResizePending/1.30", "1.30", 1, true, corev1.PersistentVolumeClaimNodeResizePending, 2, ""}, // gate off in 1.30: legacy path
		{"NodeResizePending/1.33", "1.33", 1, true, corev1.PersistentVolumeClaimNodeResizePending, 1, ""},
		{"NodeResizePending/1.37", "1.37", 1, true, corev1.PersistentVolumeClaimNodeResizePending, 1, ""},
		{"NodeResizeInProgress/1.37", "1.37", 1, true, corev1.PersistentVolumeClaimNodeResizeInProgress, 1, ""},
		{"equal/1.30", "1.30", 5, false, "", 0, ""},
		{"equal/1.37", "1.37", 5, false, "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pv := ftPV(mockDriver, "pv-a", "1", ftRWO)
			pv.Spec.Capacity[corev1.ResourceStorage] = ftGi(5)
			pvc := ftPVC(pv)
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = ftGi(5)
			pvc.Status.Capacity[corev1.ResourceStorage] = ftGi(tc.statusCap)
			if tc.allocated {
				pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: ftGi(5)}
			}
			if tc.resize != "" {
				pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: tc.resize}
			}
			drv := ftDriver(mockDriver, func(s *storagev1.CSIDriverSpec) { s.SELinuxMount = ftBool(false) })
			args := []string{"--kubelet-version", tc.version}
			if tc.gates != "" {
				args = append(args, "--feature-gates", tc.gates)
			}
			m := ftRunMock(t, []string{"--node-expansion"}, ftYAML(t, drv, pv, pvc, ftPod("p1", ftUID1, "c-pv-a")), args...)
			if m.r.Code != 0 {
				t.Fatalf("exit %d, want 0\n%s", m.r.Code, m)
			}
			for _, ex := range ftOnly(t, m, "NodeExpandVolume", tc.expand) {
				want := obj{
					"volume_id":           "1",
					"volume_path":         targetPath(m.root, ftUID1, "pv-a"),
					"staging_target_path": stagingPath(m.root, mockDriver, "1"),
					"capacity_range":      obj{"required_bytes": 5 << 30},
					"volume_capability":   mountCap(obj{"mount_flags": []any{"noatime"}}, modeSNW),
				}
				if ok, diff := jsonEqual(ex.Request, want); !ok {
					t.Errorf("NodeExpandVolume request (docs/kubelet.md §11):\n%s", diff)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 6. Versions and feature gates

// TestVersionGates runs the same inputs with --kubelet-version 1.30, 1.33,
// 1.35, 1.36 and 1.37 against the mock, for every gate-dependent rule:
// SELinux (docs/kubelet.md §6.2, §6.4 and §19.1) and
// serviceAccountTokenInSecrets (4.4). Gates the version lacks, or that are
// locked, are refused.
func TestVersionGates(t *testing.T) {
	t.Parallel()
	versions := []string{"1.30", "1.33", "1.35", "1.36", "1.37"}
	recursive := func(p *corev1.Pod) {
		r := corev1.SELinuxChangePolicyRecursive
		ftPodSC(p).SELinuxChangePolicy = &r
	}
	type rule struct {
		name  string
		gates string
		modes []corev1.PersistentVolumeAccessMode
		pod   func(*corev1.Pod)
		want  map[string]bool // version -> context expected; versions absent are not run
	}
	all := func(v bool) map[string]bool {
		return map[string]bool{"1.30": v, "1.33": v, "1.35": v, "1.36": v, "1.37": v}
	}
	rules := []rule{
		// SELinuxMountReadWriteOncePod: beta on 1.30-1.35, GA 1.36+.
		{name: "rwop", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, want: all(true)},
		// SELinuxMount: off until 1.37 (GA on).
		{name: "rwo", modes: []corev1.PersistentVolumeAccessMode{ftRWO},
			want: map[string]bool{"1.30": false, "1.33": false, "1.35": false, "1.36": false, "1.37": true}},
		{name: "rwx", modes: []corev1.PersistentVolumeAccessMode{ftRWX},
			want: map[string]bool{"1.30": false, "1.33": false, "1.35": false, "1.36": false, "1.37": true}},
		// SELinuxMount turned on (alpha in 1.30, beta after): any single mode.
		// In 1.37 it is GA and locked on: setting it to true is setting
		// the locked value (the kubelet's featuregate refuses only the other value).
		{name: "rwo+SELinuxMount", gates: "SELinuxMount=true", modes: []corev1.PersistentVolumeAccessMode{ftRWO},
			want: all(true)}, // 1.37: GA, locked on; true is its locked value
		// 6.2 item 6: in 1.30-1.31 the PV also needed exactly one access mode.
		{name: "rwo-rwx+SELinuxMount", gates: "SELinuxMount=true", modes: []corev1.PersistentVolumeAccessMode{ftRWO, ftRWX},
			want: map[string]bool{"1.30": false, "1.33": true, "1.35": true, "1.36": true}},
		{name: "rwo-rwx", modes: []corev1.PersistentVolumeAccessMode{ftRWO, ftRWX},
			want: map[string]bool{"1.30": false, "1.33": false, "1.35": false, "1.36": false, "1.37": true}},
		// 6.2 item 5: Recursive counts only with SELinuxChangePolicy on
		// (absent in 1.30, beta on from 1.33).
		{name: "rwop-recursive", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, pod: recursive,
			want: map[string]bool{"1.30": true, "1.33": false, "1.35": false, "1.36": false, "1.37": false}},
		{name: "rwop-recursive-SELinuxChangePolicy=false", gates: "SELinuxChangePolicy=false", modes: []corev1.PersistentVolumeAccessMode{ftRWOP}, pod: recursive,
			want: map[string]bool{"1.33": true, "1.35": true}},
		// 6.2 item 1: SELinuxMountReadWriteOncePod off (possible until 1.35).
		{name: "rwop-SELinuxMountReadWriteOncePod=false", gates: "SELinuxMountReadWriteOncePod=false", modes: []corev1.PersistentVolumeAccessMode{ftRWOP},
			want: map[string]bool{"1.30": false, "1.33": false, "1.35": false}},
	}
	for _, ru := range rules {
		for _, v := range versions {
			wantCtx, ok := ru.want[v]
			if !ok {
				continue
			}
			t.Run("selinux-"+ru.name+"/"+v, func(t *testing.T) {
				t.Parallel()
				args := []string{"--kubelet-version", v}
				if ru.gates != "" {
					args = append(args, "--feature-gates", ru.gates)
				}
				mf := ftSimplePV(t, ftDriver(mockDriver), "1", ru.modes, nil, ru.pod)
				m := ftRunMock(t, nil, mf, args...)
				if m.r.Code != 0 {
					t.Fatalf("exit %d, want 0\n%s", m.r.Code, m)
				}
				ctx := ""
				if wantCtx {
					ctx = ftCtx12
				}
				for _, c := range []mocklog.Call{ftOnly(t, m, "NodeStageVolume", 1)[0], ftOnly(t, m, "NodePublishVolume", 1)[0]} {
					if got := ftMountFlags(c); !reflect.DeepEqual(got, ftWantFlags(ctx)) {
						t.Errorf("%s mount_flags on %s %s\n got %q\nwant %q (docs/kubelet.md §6.2, §6.4)", c.Method, v, ru.gates, got, ftWantFlags(ctx))
					}
				}
			})
		}
	}

	// 4.4: serviceAccountTokenInSecrets exists from 1.35 (gate
	// CSIServiceAccountTokenSecrets beta on, GA 1.36); before, the API
	// server drops the field and the token goes in volume_context.
	type tokRule struct {
		version, gates string
		inSecrets      bool
	}
	for _, tr := range []tokRule{
		{"1.30", "", false}, {"1.33", "", false}, {"1.35", "", true}, {"1.36", "", true}, {"1.37", "", true},
		{"1.35", "CSIServiceAccountTokenSecrets=false", false},
	} {
		name := "serviceAccountTokenInSecrets/" + tr.version
		if tr.gates != "" {
			name += "/" + tr.gates
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			drv := ftDriver(mockDriver, func(s *storagev1.CSIDriverSpec) {
				s.SELinuxMount = ftBool(false)
				s.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}}
				s.ServiceAccountTokenInSecrets = ftBool(true)
			})
			pv := ftPV(mockDriver, "pv-a", "1", ftRWO)
			args := []string{"--kubelet-version", tr.version}
			if tr.gates != "" {
				args = append(args, "--feature-gates", tr.gates)
			}
			m := ftRunMock(t, nil, ftYAML(t, drv, pv, ftPVC(pv), ftPod("p1", ftUID1, "c-pv-a")), args...)
			if m.r.Code != 0 {
				t.Fatalf("exit %d, want 0\n%s", m.r.Code, m)
			}
			p := ftOnly(t, m, "NodePublishVolume", 1)[0]
			inCtx := p.Str("volume_context", ftTokensKey) != ""
			inSec := p.Str("secrets", ftTokensKey) != ""
			if inSec != tr.inSecrets || inCtx == tr.inSecrets {
				t.Errorf("%s %s: token in secrets=%v, in volume_context=%v; want in secrets=%v only (docs/kubelet.md §4.4)",
					tr.version, tr.gates, inSec, inCtx, tr.inSecrets)
			}
			if st := ftOnly(t, m, "NodeStageVolume", 1)[0]; st.Get("secrets") != nil || st.Str("volume_context", ftTokensKey) != "" {
				t.Errorf("NodeStage carries the token (docs/kubelet.md §3: NodeStage gets only the PV's attributes): %s", st.Raw)
			}
		})
	}

	// Gates the version does not have (gate table "–"), or locked (GA),
	// set to the other value: refused as bad usage (exit 2), no volume call.
	for _, bad := range []struct{ version, gates string }{
		{"1.30", "SELinuxChangePolicy=true"},            // introduced in 1.32
		{"1.33", "CSIServiceAccountTokenSecrets=true"},  // introduced in 1.35
		{"1.36", "SELinuxChangePolicy=false"},           // GA, locked on
		{"1.36", "SELinuxMountReadWriteOncePod=false"},  // GA, locked on
		{"1.36", "CSIServiceAccountTokenSecrets=false"}, // GA, locked on
		{"1.37", "SELinuxChangePolicy=false"},           // GA, locked on (SELinuxMount is GA in 1.37 but not locked: "Lock in 1.38")
		{"1.35", "NoSuchGate=true"},
	} {
		t.Run("refused/"+bad.version+"/"+bad.gates, func(t *testing.T) {
			t.Parallel()
			mf := ftSimplePV(t, ftDriver(mockDriver), "1", []corev1.PersistentVolumeAccessMode{ftRWOP}, nil, nil)
			m := ftRunMock(t, nil, mf, "--kubelet-version", bad.version, "--feature-gates", bad.gates)
			if m.r.Code != 2 {
				t.Fatalf("exit %d, want 2 (bad usage)\n%s", m.r.Code, m)
			}
			t.Logf("error: %s", oneLineError(t, m.r, strings.SplitN(bad.gates, "=", 2)[0]))
			if vc := ftNodeVolumeCalls(m.calls); len(vc) != 0 {
				t.Errorf("volume calls despite a refused gate: %v", mockMethodsFT(vc))
			}
		})
	}
}
