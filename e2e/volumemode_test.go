package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVolumeModeMismatchRefused: a Block PV in a container's volumeMounts,
// or a Filesystem one in volumeDevices, is refused as the kubelet's
// desired-state populator refuses it (createVolumeSpec, every release 1.30
// to 1.37, docs/kubelet.md §18): exit 2 naming the pod and the volume,
// and the driver gets no stage or publish call. `run` against the
// reference driver, and `plan` for every release.
func TestVolumeModeMismatchRefused(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(sample(t, "block"), "block.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	block := string(b)
	work := workDir(t)
	cases := map[string]struct{ manifest, want string }{
		"block-in-volumeMounts": {
			strings.Replace(strings.Replace(block, "      volumeDevices:", "      volumeMounts:", 1), "          devicePath: /dev/xvda", "          mountPath: /data", 1),
			"pod default/dbench: volume raw has volumeMode Block, but is specified in volumeMounts",
		},
		"filesystem-in-volumeDevices": {
			strings.ReplaceAll(block, "volumeMode: Block", "volumeMode: Filesystem"),
			"pod default/dbench: volume raw has volumeMode Filesystem, but is specified in volumeDevices",
		},
	}
	drv := startRefDriver(t, work, "--stage-unstage", "--block")
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			mf := writeFile(t, work, name+".yaml", c.manifest)
			root := filepath.Join(work, "root-"+name)
			r := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "-o", "json")
			wantCode(t, r, 2)
			if !strings.Contains(r.Stderr, c.want) || !strings.Contains(r.Stderr, "docs/kubelet.md §18") {
				t.Errorf("stderr does not say %q (docs/kubelet.md §18):\n%s", c.want, r.Stderr)
			}
			for _, m := range methods(calls(parseTrace(t, r))) {
				if strings.HasPrefix(m, "NodeStage") || strings.HasPrefix(m, "NodePublish") {
					t.Errorf("the driver got %s for a refused volume", m)
				}
			}
			assertNothingLeft(t, root, work)
			for _, v := range []string{"1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"} {
				p := runSim(t, "plan", "-f", mf, "--node-name", simNode, "--kubelet-version", v)
				if p.Code != 2 || !strings.Contains(p.Stderr, c.want) {
					t.Errorf("plan --kubelet-version %s: exit %d, want 2 with %q\n%s", v, p.Code, c.want, p.Stderr)
				}
			}
		})
	}
}
