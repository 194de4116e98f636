package cluster

import (
	"os"
	"strings"
	"testing"
)

func TestSkewNote(t *testing.T) {
	for _, tc := range []struct {
		apiserver string
		kubelet   int
		want      string // "" means no note
	}{
		{"v1.30.14", 30, ""},
		{"v1.37.2", 37, ""},
		{"v1.37.2", 30, "7 minor releases newer than the simulated kubelet 1.30 (outside the version skew policy: 3 at most)"},
		{"v1.37.2", 35, "2 minor releases newer than the simulated kubelet 1.35 (within the version skew policy)"},
		{"v1.30.14", 37, "older than the simulated kubelet 1.37"},
		{"", 37, "release is unknown"},
		{"(devel)", 33, "release is unknown"},
	} {
		got := SkewNote(tc.apiserver, tc.kubelet)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("SkewNote(%q, %d) = %q, want it to say %q", tc.apiserver, tc.kubelet, got, tc.want)
		}
	}
}

// A Go executable without k8s.io/kubernetes (the test binary) has no
// kube-apiserver release; a file that is no executable neither.
func TestHelperVersionWithoutKubernetes(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if v := HelperVersion(exe); v != "" {
		t.Errorf("HelperVersion(test binary) = %q, want \"\"", v)
	}
	if v := HelperVersion("/etc/hostname"); v != "" {
		t.Errorf("HelperVersion(/etc/hostname) = %q, want \"\"", v)
	}
}
