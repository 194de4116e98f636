package rootdir

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// docs/kubelet.md §1.2: <root>/pods/<podUID>/volumes/kubernetes.io~csi/<escape(specName)>/mount,
// specName being the PV name for a claim and the pod's volume name inline.
func TestTargetPath(t *testing.T) {
	p := Paths{Root: "/var/lib/kubelet"}
	tests := []struct {
		name     string
		podUID   string
		specName string
		want     string
	}{
		{"claim uses the PV name", "pod-uid-1", "pv-1", "/var/lib/kubelet/pods/pod-uid-1/volumes/kubernetes.io~csi/pv-1/mount"},
		{"inline uses the pod volume name", "pod-uid-1", "scratch", "/var/lib/kubelet/pods/pod-uid-1/volumes/kubernetes.io~csi/scratch/mount"},
		{"slash in the spec name is escaped to ~", "u", "a/b", "/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/a~b/mount"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.TargetPath(tc.podUID, tc.specName); got != tc.want {
				t.Errorf("TargetPath = %q, want %q", got, tc.want)
			}
		})
	}
}

// docs/kubelet.md §1.3: <root>/plugins/kubernetes.io/csi/<driver>/<hex(sha256(handle))>/globalmount,
// the driver name not escaped, nothing but the handle hashed.
func TestDeviceMountPath(t *testing.T) {
	p := Paths{Root: "/var/lib/kubelet"}
	tests := []struct {
		name   string
		driver string
		handle string
		want   string
	}{
		{"vol-1, hash pasted from python3 hashlib", "hostpath.csi.k8s.io", "vol-1",
			"/var/lib/kubelet/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount"},
		{"handle with slashes is hashed whole", "pd.csi.storage.gke.io", "projects/p/zones/z/disks/d",
			"/var/lib/kubelet/plugins/kubernetes.io/csi/pd.csi.storage.gke.io/" + sha256Hex("projects/p/zones/z/disks/d") + "/globalmount"},
		{"driver name kept as is", "Upper.Case/driver", "h",
			"/var/lib/kubelet/plugins/kubernetes.io/csi/Upper.Case/driver/" + sha256Hex("h") + "/globalmount"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.DeviceMountPath(tc.driver, tc.handle); got != tc.want {
				t.Errorf("DeviceMountPath = %q, want %q", got, tc.want)
			}
		})
	}
}

// docs/kubelet.md §10: "csi-" + hex(sha256(volumeHandle + driverName + nodeName)).
func TestAttachmentName(t *testing.T) {
	tests := []struct {
		handle, driver, node string
		want                 string
	}{
		{"vol-1", "hostpath.csi.k8s.io", "node-1", "csi-a5a2e67339ab5660a390dc86be397e784322823ff01f40cf2c01a72c3cab1374"},
		{"vol-2", "hostpath.csi.k8s.io", "node-1", "csi-dbfc9afa91a87ac31082bd13eff74c32d27755fb74df307e92b3eed1193db989"},
		{"h", "d", "n", "csi-" + sha256Hex("hdn")},
	}
	for _, tc := range tests {
		t.Run(tc.handle, func(t *testing.T) {
			if got := AttachmentName(tc.handle, tc.driver, tc.node); got != tc.want {
				t.Errorf("AttachmentName = %q, want %q", got, tc.want)
			}
		})
	}
}

// docs/kubelet.md §2: "csi-" + hex(sha256(podUID + podVolumeName)), no separator.
func TestInlineVolumeHandle(t *testing.T) {
	tests := []struct {
		podUID, volName string
		want            string
	}{
		{"pod-uid-1", "scratch", "csi-c5699e390261e9e6987cb40a451a4e699b550c7b5f2b6574fc12407e6f10fb2f"},
		{"pod-uid-2", "scratch", "csi-7d9fb7fa15332dae3b86defd0305ff5bc00b44bb78f13ab4228c1017a6a3a3ff"},
		{"ab", "c", "csi-" + sha256Hex("abc")},
	}
	for _, tc := range tests {
		t.Run(tc.podUID+"/"+tc.volName, func(t *testing.T) {
			if got := InlineVolumeHandle(tc.podUID, tc.volName); got != tc.want {
				t.Errorf("InlineVolumeHandle = %q, want %q", got, tc.want)
			}
		})
	}
}

// docs/kubelet.md §10: node.status.volumesAttached names are kubernetes.io/csi/<driver>^<handle>.
func TestUniqueVolumeName(t *testing.T) {
	if got, want := UniqueVolumeName("hostpath.csi.k8s.io", "vol-1"), "kubernetes.io/csi/hostpath.csi.k8s.io^vol-1"; got != want {
		t.Errorf("UniqueVolumeName = %q, want %q", got, want)
	}
}

// docs/kubelet.md §1.1.
func TestRootLayout(t *testing.T) {
	p := Paths{Root: "/var/lib/kubelet"}
	tests := []struct{ name, got, want string }{
		{"PodDir", p.PodDir("u"), "/var/lib/kubelet/pods/u"},
		{"PodVolumeDir", p.PodVolumeDir("u", "pv-1"), "/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/pv-1"},
		{"PluginDir", p.PluginDir(), "/var/lib/kubelet/plugins/kubernetes.io/csi"},
		{"RegistrationDir", p.RegistrationDir(), "/var/lib/kubelet/plugins_registry"},
		{"escapeQualifiedName", EscapeQualifiedName("kubernetes.io/csi"), "kubernetes.io~csi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// sha256Hex is the formula of docs/kubelet.md §1.3 (lowercase hex of SHA-256),
// written independently of the code under test.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
