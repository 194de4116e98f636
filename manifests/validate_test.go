package manifests

import (
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The loader refuses what the kubelet could not work with, naming the
// field by its path after the file and document.
func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // "" for valid
	}{
		{"PV without csi.driver", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {csi: {volumeHandle: h}}", "spec.csi.driver: Required value"},
		{"PV without csi.volumeHandle", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {csi: {driver: d}}", "spec.csi.volumeHandle: Required value"},
		{"non-CSI PV", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {hostPath: {path: /x}}", ""},
		{"pod volume without a name", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {volumes: [{emptyDir: {}}]}", "spec.volumes[0].name: Required value"},
		{"pod volume name repeated", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {volumes: [{name: a, emptyDir: {}}, {name: a, emptyDir: {}}]}", `spec.volumes[1].name: Duplicate value: "a"`},
		{"inline without driver", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {volumes: [{name: a, csi: {}}]}", "spec.volumes[0].csi.driver: Required value"},
		{"claim without name", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {volumes: [{name: a, persistentVolumeClaim: {}}]}", "spec.volumes[0].persistentVolumeClaim.claimName: Required value"},
		{"CSIDriver without name", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {}\nspec: {}", "metadata.name: Required value: name or generateName is required"},
		{"CSIDriver with two errors", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d}\nspec: {fsGroupPolicy: Bogus, volumeLifecycleModes: [Persistent, Bogus]}",
			// Every error, each a problem of its own.
			"2 problems in the input:\n  -: document 1: " + `spec.fsGroupPolicy: Unsupported value: "Bogus": supported values: "File", "None", "ReadWriteOnceWithFSType"` + "\n  -: document 1: " + `spec.volumeLifecycleModes: Unsupported value: "Bogus": supported values: "Persistent", "Ephemeral"`},
		{"Pod without name", "apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {}", "metadata.name: Required value"},
		{"PV without name", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {}\nspec: {}", "metadata.name: Required value"},
	}
	want := func(w string) string {
		if strings.HasPrefix(w, "2 problems") {
			return w
		}
		return "-: document 1: " + w
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&Loader{Stdin: strings.NewReader(tc.doc)}).Load([]string{"-"})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("error = %v, want none", err)
			case tc.want != "" && (err == nil || withoutLines(err.Error()) != want(tc.want)):
				t.Errorf("error = %v, want %q", err, want(tc.want))
			}
		})
	}
}

// docs/kubelet.md §14.3: the API server's CSIDriver validation, on a driver that
// was not defaulted, with its field paths (attachedRequired sic) and texts.
func TestCSIDriverErrors(t *testing.T) {
	tru, fals := true, false
	i64 := func(v int64) *int64 { return &v }
	valid := func() storagev1.CSIDriver {
		p := storagev1.FileFSGroupPolicy
		return storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io"},
			Spec:       storagev1.CSIDriverSpec{AttachRequired: &tru, PodInfoOnMount: &fals, StorageCapacity: &fals, FSGroupPolicy: &p, SELinuxMount: &fals},
		}
	}
	tests := []struct {
		name   string
		change func(d *storagev1.CSIDriver)
		want   []string
	}{
		{"valid", func(*storagev1.CSIDriver) {}, nil},
		{"required fields", func(d *storagev1.CSIDriver) { d.Spec = storagev1.CSIDriverSpec{} },
			[]string{"spec.attachedRequired: Required value", "spec.podInfoOnMount: Required value", "spec.storageCapacity: Required value", "spec.seLinuxMount: Required value"}},
		{"name not a DNS subdomain", func(d *storagev1.CSIDriver) { d.Name = "Hostpath_CSI" },
			[]string{`metadata.name: Invalid value: "Hostpath_CSI": a lowercase RFC 1123 subdomain must consist of`}},
		{"label key invalid", func(d *storagev1.CSIDriver) { d.Labels = map[string]string{"a b": "x"} },
			[]string{`metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters`}},
		{"duplicate audience, empty one twice", func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: ""}, {Audience: "vault"}, {Audience: ""}}
		}, []string{`spec.tokenRequests[2].audience: Duplicate value: ""`}},
		{"expirationSeconds bounds", func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: i64(599)}, {Audience: "b", ExpirationSeconds: i64(1<<32 + 1)}, {Audience: "c", ExpirationSeconds: i64(600)}}
		}, []string{
			"spec.tokenRequests[0].expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes",
			"spec.tokenRequests[1].expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds",
		}},
		{"duplicate audience: its expiration is not checked", func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a"}, {Audience: "a", ExpirationSeconds: i64(10)}}
		}, []string{`spec.tokenRequests[1].audience: Duplicate value: "a"`}},
		{"every rule at once, in validateCSIDriverSpec's order", func(d *storagev1.CSIDriver) {
			bogus := storagev1.FSGroupPolicy("Bogus")
			d.Spec = storagev1.CSIDriverSpec{
				FSGroupPolicy:                      &bogus,
				TokenRequests:                      []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: i64(1)}},
				VolumeLifecycleModes:               []storagev1.VolumeLifecycleMode{"Bogus"},
				NodeAllocatableUpdatePeriodSeconds: i64(1),
			}
		}, []string{
			"spec.attachedRequired: Required value",
			"spec.podInfoOnMount: Required value",
			"spec.storageCapacity: Required value",
			`spec.fsGroupPolicy: Unsupported value: "Bogus"`,
			"spec.tokenRequests[0].expirationSeconds: Invalid value: 1:",
			`spec.volumeLifecycleModes: Unsupported value: "Bogus": supported values: "Persistent", "Ephemeral"`,
			"spec.seLinuxMount: Required value",
			"spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 1:",
		}},
		{"nodeAllocatableUpdatePeriodSeconds", func(d *storagev1.CSIDriver) { d.Spec.NodeAllocatableUpdatePeriodSeconds = i64(9) },
			[]string{"spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 9: must be greater than or equal to 10 seconds"}},
		{"serviceAccountTokenInSecrets without tokenRequests", func(d *storagev1.CSIDriver) { d.Spec.ServiceAccountTokenInSecrets = &fals },
			[]string{"spec.serviceAccountTokenInSecrets: Invalid value: false: serviceAccountTokenInSecrets is set but no tokenRequests are specified"}},
		{"serviceAccountTokenInSecrets with tokenRequests", func(d *storagev1.CSIDriver) {
			d.Spec.ServiceAccountTokenInSecrets = &tru
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a"}}
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := valid()
			tc.change(&d)
			got := CSIDriverErrors(&d, Defaults{})
			if len(got) != len(tc.want) {
				t.Fatalf("errors = %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], tc.want[i])
				}
			}
			if err := ValidateCSIDriver(&d, Defaults{}); (err == nil) != (len(tc.want) == 0) {
				t.Errorf("ValidateCSIDriver = %v", err)
			}
		})
	}
}

// With VolumeLimitScaling (on from 1.37) preventPodSchedulingIfMissing is
// required after defaulting too (docs/kubelet.md §14.3).
func TestCSIDriverErrorsPreventPodScheduling(t *testing.T) {
	f := false
	d := storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}, Spec: storagev1.CSIDriverSpec{AttachRequired: &f, PodInfoOnMount: &f, StorageCapacity: &f, SELinuxMount: &f}}
	got := CSIDriverErrors(&d, Defaults{PreventPodSchedulingIfMissing: true})
	want := []string{"spec.preventPodSchedulingIfMissing: Required value"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("errors = %q, want %q", got, want)
	}
	if got := CSIDriverErrors(&d, Defaults{}); len(got) != 0 {
		t.Fatalf("before 1.37: errors = %q, want none", got)
	}
}

// The API server warns about tokenRequests without
// serviceAccountTokenInSecrets only where the field exists: with the
// CSIServiceAccountTokenSecrets gate, 1.35 on (docs/kubelet.md §14.1).
func TestCSIDriverWarnings(t *testing.T) {
	d := storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}, Spec: storagev1.CSIDriverSpec{TokenRequests: []storagev1.TokenRequest{{Audience: "vault"}}}}
	if got := CSIDriverWarnings(&d, Defaults{}); len(got) != 1 || !strings.HasPrefix(got[0], "spec.serviceAccountTokenInSecrets is unset") {
		t.Errorf("with the field: warnings %q, want the serviceAccountTokenInSecrets one", got)
	}
	var old Defaults
	old.Dropped.ServiceAccountTokenInSecrets = true
	if got := CSIDriverWarnings(&d, old); len(got) != 0 {
		t.Errorf("a release without the field: warnings %q, want none", got)
	}
	tru := true
	d.Spec.ServiceAccountTokenInSecrets = &tru
	if got := CSIDriverWarnings(&d, Defaults{}); len(got) != 0 {
		t.Errorf("field set: warnings %q, want none", got)
	}
}

// The API server of 1.38 names attachRequired by its own name; up to 1.37
// its errors said spec.attachedRequired (docs/kubelet.md §14.3).
func TestCSIDriverErrorsAttachRequiredPathByRelease(t *testing.T) {
	fals := false
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io"},
		Spec: storagev1.CSIDriverSpec{PodInfoOnMount: &fals, StorageCapacity: &fals, SELinuxMount: &fals}}
	for fixed, want := range map[bool]string{false: "spec.attachedRequired: Required value", true: "spec.attachRequired: Required value"} {
		if got := CSIDriverErrors(d, Defaults{AttachRequiredPath: fixed}); len(got) != 1 || got[0] != want {
			t.Errorf("AttachRequiredPath %t: %q, want %q", fixed, got, want)
		}
	}
}
