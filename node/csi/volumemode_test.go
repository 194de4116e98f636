package csi

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVolumeModeErr: createVolumeSpec's rule: a Block PV in volumeMounts
// and a Filesystem one (or one without volumeMode) in volumeDevices are
// refused, naming the pod and the volume; matching uses pass, in any
// container type.
func TestVolumeModeErr(t *testing.T) {
	block, fs := corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem
	pv := func(m *corev1.PersistentVolumeMode) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{VolumeMode: m}}
	}
	mounting := corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}
	mapping := corev1.Container{Name: "c", VolumeDevices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/x"}}}
	pod := func(spec corev1.PodSpec) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}, Spec: spec}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		pv   *corev1.PersistentVolume
		want string // "" for no error
	}{
		{"block in volumeMounts", pod(corev1.PodSpec{Containers: []corev1.Container{mounting}}), pv(&block), "volume data has volumeMode Block, but is specified in volumeMounts"},
		{"block in an init container's volumeMounts", pod(corev1.PodSpec{InitContainers: []corev1.Container{mounting}, Containers: []corev1.Container{mapping}}), pv(&block), "volume data has volumeMode Block, but is specified in volumeMounts"},
		{"filesystem in volumeDevices", pod(corev1.PodSpec{Containers: []corev1.Container{mapping}}), pv(&fs), "volume data has volumeMode Filesystem, but is specified in volumeDevices"},
		{"no volumeMode in volumeDevices", pod(corev1.PodSpec{Containers: []corev1.Container{mapping}}), pv(nil), "volume data has volumeMode Filesystem, but is specified in volumeDevices"},
		{"block in volumeDevices", pod(corev1.PodSpec{Containers: []corev1.Container{mapping}}), pv(&block), ""},
		{"no volumeMode in volumeMounts", pod(corev1.PodSpec{Containers: []corev1.Container{mounting}}), pv(nil), ""},
	}
	for _, c := range cases {
		err := volumeModeErr(c.pod, "data", c.pv)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", c.name, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: no error, want %q", c.name, c.want)
		case c.want != "" && (!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "pod ns/db")):
			t.Errorf("%s: %v, want %q naming pod ns/db", c.name, err, c.want)
		}
	}
}
