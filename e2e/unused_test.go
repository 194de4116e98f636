package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

const unusedUID = "7d1c0a55-0000-4000-8000-0000000000aa"

// A pod volume that no container mounts or maps is left alone, as the
// kubelet's desired-state populator leaves it ("Skipping unused volume",
// docs/kubelet.md §11): the driver gets no call for it, its claim (which
// does not exist here) is never read, and the trace says which volume was
// skipped and why. The used inline volume is published and torn down as
// usual, over real bind mounts.
func TestUnusedVolumeSkipped(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work)
	root := filepath.Join(work, "root")
	in := writeFile(t, work, "pod.yaml", `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: `+refDriverName+`}
spec: {attachRequired: false, volumeLifecycleModes: [Ephemeral]}
---
apiVersion: v1
kind: Pod
metadata: {name: app, namespace: default, uid: `+unusedUID+`}
spec:
  containers:
  - name: app
    image: registry.k8s.io/pause:3.10
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - {name: scratch, csi: {driver: `+refDriverName+`}}
  - {name: spare, csi: {driver: `+refDriverName+`}}
  - {name: gone, persistentVolumeClaim: {claimName: no-such-claim}}
`)
	r := runSim(t, "run", "-f", in, "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--node-name", simNode, "-o", "json")
	wantCode(t, r, 0)
	lines := parseTrace(t, r)
	published := 0
	for _, c := range calls(lines) {
		if c.Volume == "spare" || c.Volume == "gone" || strings.Contains(c.Raw, "/spare/") {
			t.Errorf("a call for an unused volume: %s", c.Raw)
		}
		if c.Method == "NodePublishVolume" {
			published++
			if tp, _ := c.Request["target_path"].(string); tp != targetPath(root, unusedUID, "scratch") {
				t.Errorf("NodePublishVolume target_path %q, want the used volume's %q", tp, targetPath(root, unusedUID, "scratch"))
			}
		}
	}
	if published != 1 {
		t.Errorf("%d NodePublishVolume calls, want 1 (the used volume)", published)
	}
	for _, name := range []string{"spare", "gone"} {
		found := false
		for _, l := range lines {
			if l.Kind == "step" && l.Volume == name && strings.Contains(l.Text, `skipping unused volume "`+name+`"`) &&
				strings.Contains(l.Text, "volumeMounts or volumeDevices") {
				found = true
			}
		}
		if !found {
			t.Errorf("no step says volume %q is skipped because no container uses it\n%s", name, r)
		}
	}
	assertNothingLeft(t, root, work)
}
