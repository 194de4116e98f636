package node

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

const fuzzRoot = "/var/lib/kubelet"

// FuzzPaths: for every manifest set the loader accepts, every path the
// kubelet would build for a pod's CSI volumes lies inside the root dir, and
// each name in it is exactly one path segment (the path has the depth the
// kubelet's layout gives it).
func FuzzPaths(f *testing.F) {
	files, _ := filepath.Glob("../fixtures/samples/*/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := &manifests.Loader{Stdin: bytes.NewReader(data), Limits: manifests.Limits{Objects: 200}}
		c, err := l.Load([]string{"-"})
		if err != nil {
			return
		}
		for _, pod := range c.Pods() {
			useEveryVolume(pod)
			specs, _, err := csiplugin.ResolveVolumes(c, pod)
			if err != nil {
				continue
			}
			for _, v := range specs {
				checkVolumePaths(t, string(pod.UID), v)
			}
		}
	})
}

// useEveryVolume has the pod's first container mount every volume, so that
// no volume is skipped as unused and every path is checked.
func useEveryVolume(pod *corev1.Pod) {
	if len(pod.Spec.Containers) == 0 {
		pod.Spec.Containers = []corev1.Container{{Name: "fuzz"}}
	}
	c := &pod.Spec.Containers[0]
	for _, v := range pod.Spec.Volumes {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
}

// FuzzDefaultPodPaths: the pod made when the manifests hold none takes its
// driver name from the driver or plan --driver-name and its UID from
// --pod-uid; whatever AddDefaultPod accepts gives paths inside the root dir.
func FuzzDefaultPodPaths(f *testing.F) {
	f.Add("hostpath.csi.k8s.io", "")
	f.Add("../../X", "../../X")
	f.Add("Ref.CSI", "0D4E8E0C-7F1A-4B9E-9A63-2C7E5B1F3A10")
	f.Fuzz(func(t *testing.T, driver, uid string) {
		c := manifests.New()
		pod, err := c.AddDefaultPod(manifests.DefaultPod{Driver: driver, UID: types.UID(uid), NodeName: "node-1", AttachmentName: rootdir.AttachmentName})
		if err != nil {
			return
		}
		specs, _, err := csiplugin.ResolveVolumes(c, pod)
		if err != nil {
			t.Fatalf("default pod of driver %q, uid %q: %v", driver, uid, err)
		}
		for _, v := range specs {
			checkVolumePaths(t, string(pod.UID), v)
		}
	})
}

// checkVolumePaths builds every path of one volume of one pod, as
// publish.go, stage.go and block.go do, and checks each one.
func checkVolumePaths(t *testing.T, uid string, v *csiplugin.VolumeSpec) {
	t.Helper()
	p := rootdir.Paths{Root: fuzzRoot}
	want := []struct {
		name  string
		path  string
		depth int // path segments below the root
	}{
		{"PodDir", p.PodDir(uid), 2},
		{"PodVolumeDir", p.PodVolumeDir(uid, v.SpecName), 5},
		{"TargetPath", p.TargetPath(uid, v.SpecName), 6},
		{"DeviceMountPath", p.DeviceMountPath(v.Driver, v.Handle), 6},
		{"BlockStagingPath", p.BlockStagingPath(v.SpecName), 6},
		{"BlockPublishPath", p.BlockPublishPath(v.SpecName, uid), 7},
		{"GlobalMapPath", p.GlobalMapPath(v.SpecName), 6},
		{"BlockDataDir", p.BlockDataDir(v.SpecName), 6},
		{"PodDeviceMapPath", p.PodDeviceMapPath(uid), 4},
		{"block link", filepath.Join(p.GlobalMapPath(v.SpecName), uid), 7},
		{"block symlink", filepath.Join(p.PodDeviceMapPath(uid), v.SpecName), 5},
	}
	for _, w := range want {
		rel, err := filepath.Rel(fuzzRoot, w.path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			t.Fatalf("%s %q is outside the root dir (uid %q, spec %q, driver %q)", w.name, w.path, uid, v.SpecName, v.Driver)
		}
		if got := len(strings.Split(rel, "/")); got != w.depth {
			t.Fatalf("%s %q: %d segments below the root, want %d (uid %q, spec %q, driver %q)", w.name, w.path, got, w.depth, uid, v.SpecName, v.Driver)
		}
	}
}

// FuzzSELinuxMountOption: for seLinuxOptions and a PV mount option the
// loader accepts, the kubelet's option list, joined with commas and split
// as libmount and the kernel split it, is the same list: the context=
// option is whole and last, and no option was added or merged.
func FuzzSELinuxMountOption(f *testing.F) {
	f.Add("system_u", "", "", "s0:c1,c2", "ro")
	f.Add("", "", "", "", `x="a,b"`)
	f.Add(`x",suid,y="`, "", "", "", "noexec")
	f.Add("user_u", "object_r", "container_t", "s0-s0:c0.c1023", `a="`)
	f.Fuzz(func(t *testing.T, user, role, typ, level, opt string) {
		opts := &corev1.SELinuxOptions{User: user, Role: role, Type: typ, Level: level}
		if len(manifests.SELinuxOptionsErrors(opts, field.NewPath("seLinuxOptions"))) > 0 {
			return
		}
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{MountOptions: []string{opt}}}
		if len(manifests.ObjectNameErrors(pv)) > 0 {
			return
		}
		s := &csiplugin.SELinux{Enabled: true, Level: "s0:c1,c2"}
		label := s.FileLabel(opts)
		got := csiplugin.AddSELinuxMountOption(pv.Spec.MountOptions, label)
		split := manifests.SplitMountOptions(strings.Join(got, ","))
		wantN := len(manifests.SplitMountOptions(opt)) + 1
		if len(split) != wantN || split[len(split)-1] != got[len(got)-1] {
			t.Fatalf("options %q split as %q: want %d options ending with %q", got, split, wantN, got[len(got)-1])
		}
	})
}
