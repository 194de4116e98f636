package manifests

import "testing"

// Driver names: a typo (two edits at most) is named; another driver that
// shares the name's suffix is not.
func TestDidYouMeanDriver(t *testing.T) {
	known := []string{"hostpath.csi.k8s.io", "drv.example.com"}
	for name, want := range map[string]string{
		"hostpath.csi.k8s.oi": ` (did you mean "hostpath.csi.k8s.io"?)`,
		"drv.exmaple.com":     ` (did you mean "drv.example.com"?)`,
		"nfs.csi.k8s.io":      "",
		"other.example.com":   "",
		"drv.example.com":     "",
	} {
		if got := DidYouMean(name, known); got != want {
			t.Errorf("DidYouMean(%q) = %q, want %q", name, got, want)
		}
	}
}
