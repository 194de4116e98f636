package conformance

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// allNames is every scenario, in Derive's order.
var allNames = []string{
	"registration/node-info",
	"lifecycle/persistent",
	"lifecycle/ephemeral",
	"podinfo/on-mount",
	"tokens/volume-context",
	"tokens/secrets",
	"republish/same-mount",
	"selinux/context-mount",
	"fsgroup/volume-mount-group",
	"attach/publish-context",
	"lifecycle/block",
	"expansion/node",
	"node/stage-idempotent",
	"node/publish-idempotent",
	"node/unpublish-removes-target",
	"node/unpublish-idempotent",
	"node/unstage-idempotent",
	"node/invalid-argument/NodeStageVolume",
	"node/invalid-argument/NodePublishVolume",
	"node/invalid-argument/NodeUnpublishVolume",
	"node/invalid-argument/NodeUnstageVolume",
	"timing/half-timeout",
}

var (
	stage = csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	vmg   = csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP
	stats = csi.NodeServiceCapability_RPC_GET_VOLUME_STATS
	cdv   = csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME
	pub   = csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME
)

func ptr[T any](v T) *T { return &v }

// csiDriver is a CSIDriver as the API server holds it after defaulting.
func csiDriver(mutate func(*storagev1.CSIDriverSpec)) *storagev1.CSIDriver {
	fsPolicy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	d := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: "drv.example.com"},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr(true),
			PodInfoOnMount:       ptr(false),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			StorageCapacity:      ptr(false),
			FSGroupPolicy:        &fsPolicy,
			RequiresRepublish:    ptr(false),
			SELinuxMount:         ptr(false),
		},
	}
	if mutate != nil {
		mutate(&d.Spec)
	}
	return d
}

func TestDerive(t *testing.T) {
	tests := []struct {
		name string
		info DriverInfo
		obj  *storagev1.CSIDriver
		// wantRun are the scenarios that run; every other one is skipped
		// with a reason containing wantSkip[name] (when given).
		wantRun  []string
		wantSkip map[string]string
	}{
		{
			name: "no CSIDriver, node-only driver with staging",
			info: DriverInfo{Name: "drv.example.com", Node: []csi.NodeServiceCapability_RPC_Type{stage, stats}},
			wantRun: []string{"registration/node-info", "lifecycle/persistent",
				"node/stage-idempotent", "node/publish-idempotent", "node/unpublish-removes-target", "node/unpublish-idempotent",
				"node/unstage-idempotent", "node/invalid-argument/NodeStageVolume", "node/invalid-argument/NodePublishVolume",
				"node/invalid-argument/NodeUnpublishVolume", "node/invalid-argument/NodeUnstageVolume", "timing/half-timeout"},
			wantSkip: map[string]string{
				"lifecycle/ephemeral":        "no CSIDriver object given: the kubelet refuses inline volumes",
				"podinfo/on-mount":           "podInfoOnMount: true (docs/kubelet.md §3)",
				"tokens/volume-context":      "tokenRequests (docs/kubelet.md §4)",
				"republish/same-mount":       "requiresRepublish: true (docs/kubelet.md §5)",
				"selinux/context-mount":      "seLinuxMount: true (docs/kubelet.md §6.2)",
				"fsgroup/volume-mount-group": "does not have VOLUME_MOUNT_GROUP",
				"attach/publish-context":     "no controller with PUBLISH_UNPUBLISH_VOLUME",
			},
		},
		{
			name: "no CSIDriver, attach and volume_mount_group, no staging",
			info: DriverInfo{Name: "drv.example.com", Node: []csi.NodeServiceCapability_RPC_Type{vmg},
				Controller: true, ControllerCapabilities: []csi.ControllerServiceCapability_RPC_Type{cdv, pub}},
			wantRun: []string{"registration/node-info", "lifecycle/persistent", "fsgroup/volume-mount-group", "attach/publish-context",
				"node/publish-idempotent", "node/unpublish-removes-target", "node/unpublish-idempotent",
				"node/invalid-argument/NodePublishVolume", "node/invalid-argument/NodeUnpublishVolume", "timing/half-timeout"},
			wantSkip: map[string]string{
				"node/stage-idempotent":                 "does not have STAGE_UNSTAGE_VOLUME",
				"node/unstage-idempotent":               "does not have STAGE_UNSTAGE_VOLUME",
				"node/invalid-argument/NodeStageVolume": "never calls NodeStageVolume",
			},
		},
		{
			name: "CSIDriver with every feature, tokens in volume_context",
			info: DriverInfo{Name: "drv.example.com", Node: []csi.NodeServiceCapability_RPC_Type{stage, vmg},
				Controller: true, ControllerCapabilities: []csi.ControllerServiceCapability_RPC_Type{pub}},
			obj: csiDriver(func(s *storagev1.CSIDriverSpec) {
				s.PodInfoOnMount = ptr(true)
				s.VolumeLifecycleModes = append(s.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral)
				s.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}}
				s.RequiresRepublish = ptr(true)
				s.SELinuxMount = ptr(true)
			}),
			wantRun: without(allNames, "tokens/secrets", "lifecycle/block", "expansion/node"),
			wantSkip: map[string]string{
				"tokens/secrets": "serviceAccountTokenInSecrets is not true: the kubelet puts the tokens in volume_context",
			},
		},
		{
			name: "tokens in secrets, attach not required although the driver publishes",
			info: DriverInfo{Name: "drv.example.com", Node: []csi.NodeServiceCapability_RPC_Type{stage},
				Controller: true, ControllerCapabilities: []csi.ControllerServiceCapability_RPC_Type{pub}},
			obj: csiDriver(func(s *storagev1.CSIDriverSpec) {
				s.AttachRequired = ptr(false)
				s.TokenRequests = []storagev1.TokenRequest{{Audience: ""}}
				s.ServiceAccountTokenInSecrets = ptr(true)
			}),
			wantRun: []string{"registration/node-info", "lifecycle/persistent", "tokens/secrets",
				"node/stage-idempotent", "node/publish-idempotent", "node/unpublish-removes-target", "node/unpublish-idempotent",
				"node/unstage-idempotent", "node/invalid-argument/NodeStageVolume", "node/invalid-argument/NodePublishVolume",
				"node/invalid-argument/NodeUnpublishVolume", "node/invalid-argument/NodeUnstageVolume", "timing/half-timeout"},
			wantSkip: map[string]string{
				"tokens/volume-context":  "serviceAccountTokenInSecrets is true",
				"attach/publish-context": "attachRequired is false",
				"podinfo/on-mount":       "podInfoOnMount is false",
				"republish/same-mount":   "requiresRepublish is false",
				"selinux/context-mount":  "seLinuxMount is false",
				"lifecycle/ephemeral":    `volumeLifecycleModes ["Persistent"] do not include Ephemeral`,
			},
		},
		{
			name: "ephemeral only: no PV, so nothing staged, attached or SELinux-mounted",
			info: DriverInfo{Name: "drv.example.com", Node: []csi.NodeServiceCapability_RPC_Type{stage},
				Controller: true, ControllerCapabilities: []csi.ControllerServiceCapability_RPC_Type{pub}},
			obj: csiDriver(func(s *storagev1.CSIDriverSpec) {
				s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
				s.PodInfoOnMount = ptr(true)
				s.SELinuxMount = ptr(true)
			}),
			wantRun: []string{"registration/node-info", "lifecycle/ephemeral", "podinfo/on-mount",
				"node/publish-idempotent", "node/unpublish-removes-target", "node/unpublish-idempotent",
				"node/invalid-argument/NodePublishVolume", "node/invalid-argument/NodeUnpublishVolume", "timing/half-timeout"},
			wantSkip: map[string]string{
				"lifecycle/persistent":    `volumeLifecycleModes ["Ephemeral"] do not include Persistent`,
				"selinux/context-mount":   "only to PersistentVolumes",
				"attach/publish-context":  "only PersistentVolumes are attached",
				"node/stage-idempotent":   "only PersistentVolumes are staged",
				"node/unstage-idempotent": "only PersistentVolumes are staged",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Derive(&tt.info, tt.obj, Host{})
			var names, run []string
			for _, s := range got {
				names = append(names, s.Name)
				if s.Skip == "" {
					run = append(run, s.Name)
					continue
				}
				if !strings.Contains(s.Skip, "docs/kubelet.md") {
					t.Errorf("%s: skip reason %q names no docs/kubelet.md section", s.Name, s.Skip)
				}
				if want, ok := tt.wantSkip[s.Name]; ok && !strings.Contains(s.Skip, want) {
					t.Errorf("%s: skip reason %q, want it to contain %q", s.Name, s.Skip, want)
				}
			}
			if strings.Join(names, " ") != strings.Join(allNames, " ") {
				t.Errorf("scenarios:\n got %v\nwant %v", names, allNames)
			}
			if strings.Join(run, " ") != strings.Join(tt.wantRun, " ") {
				t.Errorf("scenarios that run:\n got %v\nwant %v", run, tt.wantRun)
			}
			for name := range tt.wantSkip {
				for _, r := range run {
					if r == name {
						t.Errorf("%s runs, want it skipped", name)
					}
				}
			}
		})
	}
}

func without(names []string, drop ...string) []string {
	var out []string
	for _, n := range names {
		keep := true
		for _, d := range drop {
			keep = keep && n != d
		}
		if keep {
			out = append(out, n)
		}
	}
	return out
}

// Every scenario names its docs/kubelet.md section and says what it checks; the
// node-side CSI rules are not kubelet-specific (csi-sanity has them too),
// the rest are.
func TestScenarioMetadata(t *testing.T) {
	info := &DriverInfo{Name: "d", Node: []csi.NodeServiceCapability_RPC_Type{stage, vmg}}
	for _, s := range Derive(info, nil, Host{}) {
		if s.Section == "" || s.Checks == "" || s.run == nil {
			t.Errorf("%s: section %q, checks %q, run set %v", s.Name, s.Section, s.Checks, s.run != nil)
		}
		if want := !strings.HasPrefix(s.Name, "node/"); s.KubeletSpecific != want {
			t.Errorf("%s: KubeletSpecific %v, want %v", s.Name, s.KubeletSpecific, want)
		}
	}
}

func TestFailureString(t *testing.T) {
	f := Failure{
		Did:     "NodePublishVolume (republish) unmounted and remounted the target: mount ID 123 -> 456",
		Needed:  "the kubelet republishes over a live mount and the pod keeps the old one",
		Section: "5",
	}
	want := "NodePublishVolume (republish) unmounted and remounted the target: mount ID 123 -> 456; the kubelet republishes over a live mount and the pod keeps the old one (docs/kubelet.md §5)"
	if got := f.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestPodUIDStable(t *testing.T) {
	a, b := podUID("lifecycle/persistent"), podUID("lifecycle/persistent")
	if a != b || a == podUID("lifecycle/ephemeral") {
		t.Errorf("podUID not stable per scenario: %s %s", a, b)
	}
	if len(a) != 36 || strings.Count(string(a), "-") != 4 {
		t.Errorf("podUID %q is not UUID-shaped", a)
	}
}

func TestContextOption(t *testing.T) {
	tests := []struct {
		opts, super string
		want        string
		ok          bool
	}{
		{"rw,relatime", "rw,seclabel", "", false},
		{"rw", `rw,context="system_u:object_r:container_file_t:s0:c1,c2"`, "system_u:object_r:container_file_t:s0:c1,c2", true},
		{"rw,context=system_u:object_r:tmp_t:s0", "rw", "system_u:object_r:tmp_t:s0", true},
		{"rw", "rw,fscontext=system_u:object_r:tmp_t:s0", "", false},
		{"rw", `rw,fscontext=a:b:c:s0,context="u:object_r:t:s0:c3,c4",seclabel`, "u:object_r:t:s0:c3,c4", true},
	}
	for _, tt := range tests {
		m := &mountinfo.Info{Options: tt.opts, VFSOptions: tt.super}
		got, ok := contextOption(m)
		if got != tt.want || ok != tt.ok {
			t.Errorf("contextOption(%q, %q) = %q, %v; want %q, %v", tt.opts, tt.super, got, ok, tt.want, tt.ok)
		}
	}
}
