package scenarioinput

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance/testdriver"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// The inline volumes' attributes: the definition's or the pod's, with
// --volume-attributes on top (the command line wins); readOnly from
// either.
func TestInlineVolumesPrecedence(t *testing.T) {
	def, err := testdriver.Parse("td.yaml", []byte("DriverInfo: {Name: d.csi}\nInlineVolumes:\n- Attributes: {a: def, b: def}\n  ReadOnly: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	flag := map[string]string{"b": "flag"}
	var cfg conformance.Config
	InlineFromTestDriver(def, flag, &cfg)
	if want := map[string]string{"a": "def", "b": "flag"}; !maps.Equal(cfg.InlineAttributes, want) || !cfg.InlineReadOnly {
		t.Errorf("from the definition: %v readOnly %v, want %v and true", cfg.InlineAttributes, cfg.InlineReadOnly, want)
	}

	pod := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(pod, []byte(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: app, image: x}]
  volumes:
  - {name: other, csi: {driver: other.csi, volumeAttributes: {a: other}}}
  - {name: mine, csi: {driver: d.csi, volumeAttributes: {a: pod, b: pod}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := (&manifests.Loader{}).Load([]string{pod})
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cfg = conformance.Config{}
	FromPods(c, "d.csi", flag, &cfg, func(m string) { errb.WriteString(m + "\n") })
	if want := map[string]string{"a": "pod", "b": "flag"}; !maps.Equal(cfg.InlineAttributes, want) || cfg.InlineReadOnly {
		t.Errorf("from the pod: %v readOnly %v, want %v and false", cfg.InlineAttributes, cfg.InlineReadOnly, want)
	}
	if !strings.Contains(errb.String(), `the scenarios' volumes follow pod default/web: the inline volume "mine"`) {
		t.Errorf("stderr %q", errb.String())
	}
	errb.Reset()
	cfg = conformance.Config{}
	FromPods(c, "third.csi", flag, &cfg, func(m string) { errb.WriteString(m + "\n") })
	if cfg.InlineAttributes != nil || !strings.Contains(errb.String(), "none of the 1 Pod(s) given has a CSI volume of third.csi") {
		t.Errorf("a pod without the driver's volumes: %v, stderr %q", cfg.InlineAttributes, errb.String())
	}
}
