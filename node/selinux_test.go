package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// withSELinux turns the node's SELinux on with a fixed level for options
// without one.
func withSELinux(level string) envOption {
	return func(c *Config) { c.SELinux = csiplugin.SELinux{Enabled: true, Level: level} }
}

func dryRun(c *Config) { c.DryRun = true }

// seLinuxPod is a pod whose container "app" mounts the volume "data" (claim
// data-1); podSC is the pod's securityContext and appSC the container's,
// both YAML flow mappings or "".
func seLinuxPod(name, uid, podSC, appSC string) string {
	s := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: default, uid: %s}\nspec:\n", name, uid)
	if podSC != "" {
		s += "  securityContext: " + podSC + "\n"
	}
	app := "{name: app, image: busybox, volumeMounts: [{name: data, mountPath: /data}]"
	if appSC != "" {
		app += ", securityContext: " + appSC
	}
	return s + "  containers: [" + app + "}]\n  volumes: [" + claimVol("data", "data-1") + "]"
}

func TestFileLabel(t *testing.T) {
	seq := func(ns ...int) func(int) int {
		return func(int) int { n := ns[0]; ns = ns[1:]; return n }
	}
	tests := []struct {
		name  string
		node  csiplugin.SELinux
		opts  *corev1.SELinuxOptions
		want  string
		draws int // the random categories drawn
	}{
		{name: "no options", opts: nil, want: ""},
		{name: "no field set", opts: &corev1.SELinuxOptions{}, want: ""},
		{name: "level", opts: &corev1.SELinuxOptions{Level: "s0:c1,c2"}, want: "system_u:object_r:container_file_t:s0:c1,c2"},
		{name: "user and level", opts: &corev1.SELinuxOptions{User: "user_u", Level: "s0:c1,c2"}, want: "user_u:object_r:container_file_t:s0:c1,c2"},
		// Role and type change the process label only.
		{name: "role and type ignored", opts: &corev1.SELinuxOptions{Role: "sysadm_r", Type: "spc_t", Level: "s0:c1,c2"}, want: "system_u:object_r:container_file_t:s0:c1,c2"},
		{name: "no level: the node's fixed one", node: csiplugin.SELinux{Level: "s0:c5,c9"}, opts: &corev1.SELinuxOptions{Type: "spc_t"}, want: "system_u:object_r:container_file_t:s0:c5,c9"},
		{name: "no level: two random categories, lower first", node: csiplugin.SELinux{Rand: seq(700, 12)}, opts: &corev1.SELinuxOptions{User: "u"}, want: "u:object_r:container_file_t:s0:c12,c700"},
		{name: "no level: a repeated category is drawn again", node: csiplugin.SELinux{Rand: seq(7, 7, 3)}, opts: &corev1.SELinuxOptions{Role: "r"}, want: "system_u:object_r:container_file_t:s0:c3,c7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.node.FileLabel(tc.opts); got != tc.want {
				t.Errorf("FileLabel = %q, want %q", got, tc.want)
			}
		})
	}
	// math/rand: two different categories below 1024.
	var s csiplugin.SELinux
	l := s.FileLabel(&corev1.SELinuxOptions{Role: "r"})
	var c1, c2 int
	if _, err := fmt.Sscanf(l, "system_u:object_r:container_file_t:s0:c%d,c%d", &c1, &c2); err != nil || c1 >= c2 || c2 >= 1024 {
		t.Errorf("random label %q", l)
	}
}

func TestContainerSELinuxOptions(t *testing.T) {
	podLevel := &corev1.SELinuxOptions{Level: "s0:c1,c2"}
	ctrLevel := &corev1.SELinuxOptions{Level: "s0:c3,c4"}
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	withSC := func(o *corev1.SELinuxOptions) *corev1.SecurityContext {
		return &corev1.SecurityContext{SELinuxOptions: o}
	}
	tests := []struct {
		name string
		pod  corev1.Pod
		want []*corev1.SELinuxOptions
	}{
		{"pod options for a container without its own", corev1.Pod{Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{SELinuxOptions: podLevel},
			Containers:      []corev1.Container{{Name: "a", VolumeMounts: mounts}},
		}}, []*corev1.SELinuxOptions{podLevel}},
		{"a container's options replace the pod's", corev1.Pod{Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{SELinuxOptions: podLevel},
			Containers:      []corev1.Container{{Name: "a", VolumeMounts: mounts, SecurityContext: withSC(ctrLevel)}},
		}}, []*corev1.SELinuxOptions{ctrLevel}},
		{"a container that does not mount the volume adds nothing", corev1.Pod{Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{SELinuxOptions: podLevel},
			Containers:      []corev1.Container{{Name: "a", SecurityContext: withSC(ctrLevel)}},
		}}, nil},
		{"init, regular and ephemeral containers in that order", corev1.Pod{Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{SELinuxOptions: podLevel},
			InitContainers:  []corev1.Container{{Name: "i", VolumeMounts: mounts, SecurityContext: withSC(ctrLevel)}},
			Containers:      []corev1.Container{{Name: "a", VolumeMounts: mounts}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "e", VolumeMounts: mounts, SecurityContext: &corev1.SecurityContext{}}}},
		}}, []*corev1.SELinuxOptions{ctrLevel, podLevel, podLevel}},
		{"no options anywhere", corev1.Pod{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "a", VolumeMounts: mounts}},
		}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := csiplugin.ContainerSELinuxOptions(&tc.pod, "data"); !slices.Equal(got, tc.want) {
				t.Errorf("options = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAddSELinuxMountOption(t *testing.T) {
	opts := []string{"ro", "noatime"}
	got := csiplugin.AddSELinuxMountOption(opts, "system_u:object_r:container_file_t:s0:c1,c2")
	want := []string{"ro", "noatime", `context="system_u:object_r:container_file_t:s0:c1,c2"`}
	if !slices.Equal(got, want) {
		t.Errorf("options = %q, want %q", got, want)
	}
	if len(opts) != 2 {
		t.Errorf("the PV's options were changed: %q", opts)
	}
}

// docs/kubelet.md §6.2, §6.3: the context="..." mount option on NodeStage and
// NodePublish, release by release, under the access-mode, CSIDriver, node
// and pod conditions (util.VolumeSupportsSELinuxMount,
// GetMountSELinuxLabel).
func TestSELinuxMountOption(t *testing.T) {
	const label = `context="system_u:object_r:container_file_t:s0:c1,c2"`
	seDriver := csiDriverDoc("attachRequired: false", "seLinuxMount: true")
	levelSC := `{seLinuxOptions: {level: "s0:c1,c2"}}`
	tests := []struct {
		name   string
		minor  int
		gates  string
		driver string
		modes  string
		podSC  string
		appSC  string
		off    bool // node SELinux disabled
		want   string
	}{
		{name: "1.37 RWOP", minor: 37, modes: "[ReadWriteOncePod]", want: label},
		{name: "1.30 RWOP: the RWOP gate is beta on", minor: 30, modes: "[ReadWriteOncePod]", want: label},
		{name: "1.35 RWOP with SELinuxMountReadWriteOncePod=false", minor: 35, gates: "SELinuxMountReadWriteOncePod=false", modes: "[ReadWriteOncePod]"},
		{name: "1.37 RWO: SELinuxMount is GA", minor: 37, modes: "[ReadWriteOnce]", want: label},
		{name: "1.36 RWO: SELinuxMount beta off", minor: 36, modes: "[ReadWriteOnce]"},
		{name: "1.36 RWO with SELinuxMount=true", minor: 36, gates: "SELinuxMount=true", modes: "[ReadWriteOnce]", want: label},
		{name: "1.31 two modes with SELinuxMount: one mode needed", minor: 31, gates: "SELinuxMount=true", modes: "[ReadWriteOnce, ReadWriteMany]"},
		{name: "1.31 one mode with SELinuxMount", minor: 31, gates: "SELinuxMount=true", modes: "[ReadWriteMany]", want: label},
		{name: "1.32 two modes with SELinuxMount: any mode", minor: 32, gates: "SELinuxMount=true", modes: "[ReadWriteOnce, ReadWriteMany]", want: label},
		{name: "CSIDriver without seLinuxMount", minor: 37, driver: noAttachDriver, modes: "[ReadWriteOncePod]"},
		{name: "node SELinux off", minor: 37, modes: "[ReadWriteOncePod]", off: true},
		{name: "pod without SELinux options", minor: 37, modes: "[ReadWriteOncePod]", podSC: "{fsGroup: 5}"},
		{name: "1.37 seLinuxChangePolicy Recursive", minor: 37, modes: "[ReadWriteOncePod]", podSC: `{seLinuxOptions: {level: "s0:c1,c2"}, seLinuxChangePolicy: Recursive}`},
		{name: "1.32 Recursive without the SELinuxChangePolicy gate", minor: 32, modes: "[ReadWriteOncePod]", podSC: `{seLinuxOptions: {level: "s0:c1,c2"}, seLinuxChangePolicy: Recursive}`, want: label},
		{name: "1.37 MountOption policy", minor: 37, modes: "[ReadWriteOncePod]", podSC: `{seLinuxOptions: {level: "s0:c1,c2"}, seLinuxChangePolicy: MountOption}`, want: label},
		{name: "container user", minor: 37, modes: "[ReadWriteOncePod]", appSC: `{seLinuxOptions: {user: user_u, level: "s0:c1,c2"}}`, want: `context="user_u:object_r:container_file_t:s0:c1,c2"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			driver, podSC := seDriver, levelSC
			if tc.driver != "" {
				driver = tc.driver
			}
			if tc.podSC != "" {
				podSC = tc.podSC
			}
			opts := []envOption{withGates(t, tc.minor, tc.gates), dryRun}
			if !tc.off {
				opts = append(opts, withSELinux("s0:c99,c100"))
			}
			m := docs(driver, pvDoc("pv-1", "vol-1", "data-1", "accessModes: "+tc.modes, "mountOptions: [noatime]"), pvc1,
				seLinuxPod("app-1", "pod-uid-1", podSC, tc.appSC))
			e := newEnv(t, m, newFakeDriver(capStage), opts...)
			e.mountOK("app-1")
			want := []string{"noatime"}
			if tc.want != "" {
				want = append(want, tc.want)
			}
			calls := e.drv.Calls()
			st := one[*csi.NodeStageVolumeRequest](t, calls, "NodeStageVolume").GetVolumeCapability().GetMount().GetMountFlags()
			pub := one[*csi.NodePublishVolumeRequest](t, calls, "NodePublishVolume").GetVolumeCapability().GetMount().GetMountFlags()
			if !slices.Equal(st, want) || !slices.Equal(pub, want) {
				t.Errorf("mount flags: NodeStage %q, NodePublish %q; want %q", st, pub, want)
			}
			// vol_data.json keeps the context (seLinuxMountContext) only when sent.
			volData := readFile(e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1/vol_data.json")
			if has := strings.Contains(volData, `"seLinuxMountContext":"system_u:object_r:container_file_t:s0:c1,c2"`) ||
				strings.Contains(volData, `"seLinuxMountContext":"user_u:`); has != (tc.want != "") {
				t.Errorf("vol_data.json = %s; want seLinuxMountContext %t", volData, tc.want != "")
			}
		})
	}
}

// An inline volume never gets the option (util.VolumeSupportsSELinuxMount:
// PVs only), even with everything else in place.
func TestSELinuxNeverForInline(t *testing.T) {
	pod := `apiVersion: v1
kind: Pod
metadata: {name: app-1, namespace: default, uid: pod-uid-1}
spec:
  securityContext: {seLinuxOptions: {level: "s0:c1,c2"}}
  containers: [{name: app, image: busybox, volumeMounts: [{name: scratch, mountPath: /s}]}]
  volumes: [` + inlineVol("scratch", "") + `]`
	e := newEnv(t, docs(csiDriverDoc("volumeLifecycleModes: [Ephemeral]", "seLinuxMount: true"), pod), newFakeDriver(), withSELinux(""), dryRun)
	e.mountOK("app-1")
	req := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume")
	if f := req.GetVolumeCapability().GetMount().GetMountFlags(); len(f) != 0 {
		t.Errorf("inline mount flags = %q, want none", f)
	}
	if req.GetVolumeId() != inlineHandlePod1Scratch {
		t.Errorf("volume_id %q, want %q", req.GetVolumeId(), inlineHandlePod1Scratch)
	}
}

// Two labels for one RWOP volume in one pod, and two pods with different
// labels on one volume: the kubelet refuses the pod (AddPodToVolume).
func TestSELinuxLabelErrors(t *testing.T) {
	seDriver := csiDriverDoc("attachRequired: false", "seLinuxMount: true")
	t.Run("two containers, two labels", func(t *testing.T) {
		pod := `apiVersion: v1
kind: Pod
metadata: {name: app-1, namespace: default, uid: pod-uid-1}
spec:
  securityContext: {seLinuxOptions: {level: "s0:c1,c2"}}
  containers:
  - {name: a, image: busybox, volumeMounts: [{name: data, mountPath: /d}]}
  - {name: b, image: busybox, volumeMounts: [{name: data, mountPath: /d}], securityContext: {seLinuxOptions: {level: "s0:c3,c4"}}}
  volumes: [` + claimVol("data", "data-1") + `]`
		e := newEnv(t, docs(seDriver, pvDoc("pv-1", "vol-1", "data-1", "accessModes: [ReadWriteOncePod]"), pvc1, pod), newFakeDriver(capStage), withSELinux(""), dryRun)
		ve := volErr(t, e.mount("app-1"))
		const want = "multiple SELinux labels found: system_u:object_r:container_file_t:s0:c1,c2,system_u:object_r:container_file_t:s0:c3,c4"
		if ve.Operation != "AddPodToVolume" || ve.Kind != csiplugin.Transient || !strings.Contains(ve.Error(), want) {
			t.Errorf("error %q (%s, %v), want AddPodToVolume, transient, %q", ve, ve.Operation, ve.Kind, want)
		}
		if n := len(e.drv.Calls()); n != 0 {
			t.Errorf("%d calls to the driver, want none", n)
		}
	})
	t.Run("two labels on a volume without SELinux mount support: no label, no error", func(t *testing.T) {
		pod := strings.Replace(seLinuxPod("app-1", "pod-uid-1", `{seLinuxOptions: {level: "s0:c1,c2"}}`, `{seLinuxOptions: {level: "s0:c3,c4"}}`),
			"containers: [", "containers: [{name: i, image: busybox, volumeMounts: [{name: data, mountPath: /d}]}, ", 1)
		e := newEnv(t, docs(seDriver, pvDoc("pv-1", "vol-1", "data-1", "accessModes: [ReadWriteMany]"), pvc1, pod), newFakeDriver(capStage), withGates(t, 36, ""), withSELinux(""), dryRun)
		e.mountOK("app-1")
	})
	for _, tc := range []struct {
		name, level2, wantErr string
	}{
		{"two pods, same label: one stage, both published", "s0:c1,c2", ""},
		{"two pods, different labels", "s0:c3,c4", `conflicting SELinux labels of volume pv-1: "system_u:object_r:container_file_t:s0:c1,c2" and "system_u:object_r:container_file_t:s0:c3,c4"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := docs(seDriver, pvDoc("pv-1", "vol-1", "data-1", "accessModes: [ReadWriteOnce]"), pvc1,
				seLinuxPod("app-1", "pod-uid-1", `{seLinuxOptions: {level: "s0:c1,c2"}}`, ""),
				seLinuxPod("app-2", "pod-uid-2", `{seLinuxOptions: {level: "`+tc.level2+`"}}`, ""))
			e := newEnv(t, m, newFakeDriver(capStage), withSELinux(""), dryRun)
			e.mountOK("app-1")
			res := e.mount("app-2")
			if tc.wantErr == "" {
				if err := res.Volumes[0].Err; err != nil {
					t.Fatalf("second pod: %v", err)
				}
				if n := len(only(e.drv.Calls(), "NodeStageVolume")); n != 1 {
					t.Errorf("%d NodeStageVolume, want 1", n)
				}
				return
			}
			ve := volErr(t, res)
			if !strings.Contains(ve.Error(), tc.wantErr) {
				t.Errorf("error %q, want %q", ve, tc.wantErr)
			}
		})
	}
}

// Without DryRun the kubelet reads the target's mount options back; the
// fake mounts nothing, so the check says the target is no mount point.
func TestSELinuxContextCheck(t *testing.T) {
	m := docs(csiDriverDoc("attachRequired: false", "seLinuxMount: true"), pvDoc("pv-1", "vol-1", "data-1", "accessModes: [ReadWriteOncePod]"), pvc1,
		seLinuxPod("app-1", "pod-uid-1", `{seLinuxOptions: {level: "s0:c1,c2"}}`, ""))
	e := newEnv(t, m, newFakeDriver(capStage), withSELinux(""))
	e.mountOK("app-1")
	want := "SELinux: cannot check the context of " + targetPV1(e.root) + ": not a mount point"
	if got := e.steps(true); !slices.Contains(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
	e.unmountOK("app-1")
}
