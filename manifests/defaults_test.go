package manifests

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

func loadString(t *testing.T, l *Loader, manifests string) *Cluster {
	t.Helper()
	l.Stdin = strings.NewReader(manifests)
	c, err := l.Load([]string{"-"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// docs/kubelet.md §14.2: SetDefaults_CSIDriver.
func TestCSIDriverDefaults(t *testing.T) {
	tests := []struct {
		name     string
		defaults Defaults
		spec     string
		check    func(t *testing.T, s storagev1.CSIDriverSpec)
	}{
		{
			name: "empty spec",
			spec: "{}",
			check: func(t *testing.T, s storagev1.CSIDriverSpec) {
				if s.AttachRequired == nil || !*s.AttachRequired {
					t.Errorf("attachRequired = %v, want true", s.AttachRequired)
				}
				for name, p := range map[string]*bool{"podInfoOnMount": s.PodInfoOnMount, "storageCapacity": s.StorageCapacity, "requiresRepublish": s.RequiresRepublish, "seLinuxMount": s.SELinuxMount} {
					if p == nil || *p {
						t.Errorf("%s = %v, want false", name, p)
					}
				}
				if s.FSGroupPolicy == nil || *s.FSGroupPolicy != "ReadWriteOnceWithFSType" {
					t.Errorf("fsGroupPolicy = %v, want ReadWriteOnceWithFSType", s.FSGroupPolicy)
				}
				if !slices.Equal(s.VolumeLifecycleModes, []storagev1.VolumeLifecycleMode{"Persistent"}) {
					t.Errorf("volumeLifecycleModes = %v, want [Persistent]", s.VolumeLifecycleModes)
				}
				if s.PreventPodSchedulingIfMissing != nil {
					t.Errorf("preventPodSchedulingIfMissing = %v, want unset with the gate off", *s.PreventPodSchedulingIfMissing)
				}
				if s.TokenRequests != nil || s.NodeAllocatableUpdatePeriodSeconds != nil || s.ServiceAccountTokenInSecrets != nil {
					t.Errorf("no defaults for tokenRequests, nodeAllocatableUpdatePeriodSeconds, serviceAccountTokenInSecrets: %+v", s)
				}
			},
		},
		{
			name:     "VolumeLimitScaling gate on (1.37)",
			defaults: Defaults{PreventPodSchedulingIfMissing: true},
			spec:     "{}",
			check: func(t *testing.T, s storagev1.CSIDriverSpec) {
				if s.PreventPodSchedulingIfMissing == nil || *s.PreventPodSchedulingIfMissing {
					t.Errorf("preventPodSchedulingIfMissing = %v, want false", s.PreventPodSchedulingIfMissing)
				}
			},
		},
		{
			name: "explicit values kept",
			spec: "{attachRequired: false, podInfoOnMount: true, fsGroupPolicy: File, volumeLifecycleModes: [Ephemeral], requiresRepublish: true, seLinuxMount: true}",
			check: func(t *testing.T, s storagev1.CSIDriverSpec) {
				if *s.AttachRequired || !*s.PodInfoOnMount || *s.FSGroupPolicy != "File" || !*s.RequiresRepublish || !*s.SELinuxMount {
					t.Errorf("spec changed: %+v", s)
				}
				if !slices.Equal(s.VolumeLifecycleModes, []storagev1.VolumeLifecycleMode{"Ephemeral"}) {
					t.Errorf("volumeLifecycleModes = %v", s.VolumeLifecycleModes)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := loadString(t, &Loader{Defaults: tc.defaults}, "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: d}\nspec: "+tc.spec)
			d, _ := c.CSIDriver("d")
			tc.check(t, d.Spec)
		})
	}
}

// The API server merges stringData into data (stringData wins) and
// defaults the type and namespace.
func TestSecretDefaults(t *testing.T) {
	c := loadString(t, &Loader{}, `apiVersion: v1
kind: Secret
metadata: {name: s}
data: {a: YQ==, b: Yg==}
stringData: {b: B, c: C}
---
apiVersion: v1
kind: Secret
metadata: {name: only-string, namespace: ns}
stringData: {k: v}`)
	s, found := c.Secret("default", "s")
	if !found {
		t.Fatal("secret not in namespace default")
	}
	got := map[string]string{}
	for k, v := range s.Data {
		got[k] = string(v)
	}
	if want := map[string]string{"a": "a", "b": "B", "c": "C"}; !maps.Equal(got, want) {
		t.Errorf("data = %v, want %v", got, want)
	}
	if s.StringData != nil || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("stringData %v, type %q; want nil, Opaque", s.StringData, s.Type)
	}
	s2, _ := c.Secret("ns", "only-string")
	if string(s2.Data["k"]) != "v" {
		t.Errorf("only stringData: data = %v", s2.Data)
	}
}

// Pod defaults: namespace default, serviceAccountName default (or the
// deprecated serviceAccount), a stable UID unless metadata.uid is given.
func TestPodDefaults(t *testing.T) {
	c := loadString(t, &Loader{}, `apiVersion: v1
kind: Pod
metadata: {name: app}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata: {name: app2, namespace: team, uid: fixed-uid}
spec: {serviceAccount: legacy-sa, containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata: {name: app3}
spec: {serviceAccountName: sa, serviceAccount: legacy-sa, containers: [{name: c, image: i}]}`)
	pods := c.Pods()
	if len(pods) != 3 {
		t.Fatalf("%d pods", len(pods))
	}
	tests := []struct {
		ns, sa, uid string
	}{
		{"default", "default", "d3e84cc2-da6e-472c-8632-496bb2a6bec2"},
		{"team", "legacy-sa", "fixed-uid"},
		{"default", "sa", string(StableUID("Pod", "default", "app3"))},
	}
	for i, tc := range tests {
		p := pods[i]
		if p.Namespace != tc.ns || p.Spec.ServiceAccountName != tc.sa || string(p.UID) != tc.uid {
			t.Errorf("pod %s: namespace %q, serviceAccountName %q, uid %q; want %q, %q, %q", p.Name, p.Namespace, p.Spec.ServiceAccountName, p.UID, tc.ns, tc.sa, tc.uid)
		}
	}
}

func TestStableUID(t *testing.T) {
	// Pasted from python3: sha256("csi-kubelet-sim/Pod/default/app") with
	// the UUID version 4 and variant bits set.
	if got := StableUID("Pod", "default", "app"); got != "d3e84cc2-da6e-472c-8632-496bb2a6bec2" {
		t.Errorf("StableUID = %s", got)
	}
	if StableUID("Pod", "default", "a") == StableUID("ServiceAccount", "default", "a") {
		t.Errorf("kinds share UIDs")
	}
}

func TestClaimAndVolumeDefaults(t *testing.T) {
	c := loadString(t, &Loader{}, pvDoc+"\n---\n"+pvcDoc+"\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa}")
	pv, _ := c.PersistentVolume("pv-1")
	pvc, found := c.PersistentVolumeClaim("default", "data-1")
	if !found {
		t.Fatal("claim not in namespace default")
	}
	if pv.Spec.VolumeMode == nil || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || pvc.Spec.VolumeMode == nil || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("volumeMode not defaulted to Filesystem")
	}
	sa, found := c.ServiceAccount("default", "sa")
	if !found || sa.UID != StableUID("ServiceAccount", "default", "sa") {
		t.Errorf("service account: %+v", sa)
	}
}
