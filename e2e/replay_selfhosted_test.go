package e2e

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReplayFromOwnAPIServer: `--kubeconfig --pod` tried without a cluster,
// as docs/replay.md "Try it without a cluster" tells it: one run holds its
// own API server with the pod running (examples/replay/cluster.yaml: its
// claim provisioned and bound, its inline volume published) and writes a
// kubeconfig for a ServiceAccount that may only get what a replay reads;
// run, plan and validate replay the pod through that kubeconfig against a
// second driver (the "local build") on another root dir. The replay uses
// the claim's PV as the cluster bound it (no CreateVolume), and both runs
// leave nothing.
func TestReplayFromOwnAPIServer(t *testing.T) {
	apiserverHelper(t)
	clusterWork, localWork := workDir(t), workDir(t)
	inCluster := startRefDriver(t, clusterWork)
	local := startRefDriver(t, localWork)
	clusterRoot, localRoot := filepath.Join(clusterWork, "root"), filepath.Join(localWork, "root")
	kc := filepath.Join(clusterWork, "replay.kubeconfig")

	// Terminal 1.
	cluster := startSim(t, "run", "--apiserver", "--hold", "forever", "-f", repoFile(t, "examples/replay/cluster.yaml"),
		"--node-name", simNode, "--endpoint", inCluster.Sock, "--root-dir", clusterRoot,
		"--driver-service-account", "replay/pod-reader", "--driver-kubeconfig", kc)
	waitOutput(t, cluster, "volume scratch pod shop/checkout", 3*time.Minute)
	if !strings.Contains(cluster.out.String(), "system:serviceaccount:replay:pod-reader") {
		t.Errorf("the kubeconfig is not the pod-reader's:\n%s", cluster.out.String())
	}
	pvRE := regexp.MustCompile(`NodePublishVolume +OK +\S+ +volume (pvc-[0-9a-f-]+) pod shop/checkout`)
	m := pvRE.FindStringSubmatch(cluster.out.String())
	if m == nil {
		t.Fatalf("no NodePublishVolume of the provisioned volume in the cluster's run:\n%s", cluster.out.String())
	}
	pv := m[1]

	// Terminal 2.
	r := runSim(t, "run", "--kubeconfig", kc, "--pod", "shop/checkout", "--endpoint", local.Sock, "--root-dir", localRoot)
	wantCode(t, r, 0)
	if got := pvRE.FindStringSubmatch(r.Stdout); got == nil || got[1] != pv {
		t.Errorf("the replay did not publish the cluster's bound volume %s:\n%s", pv, r.Stdout)
	}
	for _, want := range []string{"volume scratch pod shop/checkout", "left behind nothing"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the replay's trace lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "CreateVolume") || strings.Contains(r.Stdout, "DeleteVolume") {
		t.Errorf("the replay provisioned or deleted a volume of the cluster's bound claim:\n%s", r.Stdout)
	}
	p := runSim(t, "plan", "--kubeconfig", kc, "--pod", "shop/checkout", "--node-capabilities", "STAGE_UNSTAGE_VOLUME")
	wantCode(t, p, 0)
	if !strings.Contains(p.Stdout, "NodeStageVolume") || !strings.Contains(p.Stdout, pv) {
		t.Errorf("plan of the replayed pod does not stage %s:\n%s", pv, p.Stdout)
	}
	v := runSim(t, "validate", "--kubeconfig", kc, "--pod", "shop/checkout")
	wantCode(t, v, 0)
	if !strings.Contains(v.Stdout, "CSIDriver "+refDriverName+": valid") {
		t.Errorf("validate of the replayed pod does not judge its CSIDriver:\n%s", v.Stdout)
	}
	if ms := mountsUnder(localRoot); len(ms) > 0 {
		t.Errorf("the replay left mounts: %v", ms)
	}

	_ = cluster.cmd.Process.Signal(syscall.SIGINT)
	cr := cluster.wait(t, 2*time.Minute)
	wantCode(t, cr, 0) // Ctrl-C ends --hold forever
	assertNoControlPlane(t, clusterRoot)
	if !strings.Contains(cr.Stdout, "handle "+pv+": deleted") {
		t.Errorf("the cluster's run did not delete its volume %s:\n%s", pv, cr.Stdout)
	}
	if ms := mountsUnder(clusterRoot); len(ms) > 0 {
		t.Errorf("still mounted: %v", ms)
	}
}
