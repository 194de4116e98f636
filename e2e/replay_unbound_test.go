package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replayUnbound is a cluster whose pod's claim is Pending: a class of the
// reference driver, whose CSIDriver asks for pod info; no PV yet.
func replayUnbound(t *testing.T, work string) (*replayCluster, *corev1.PersistentVolumeClaim) {
	t.Helper()
	rc := startReplayCluster(t, work)
	ctx := context.Background()
	yes, no := true, false
	if _, err := rc.admin.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: refDriverName},
		Spec: storagev1.CSIDriverSpec{PodInfoOnMount: &yes, AttachRequired: &no}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("CSIDriver: %v", err)
	}
	if _, err := rc.admin.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"},
		Provisioner: refDriverName}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("StorageClass: %v", err)
	}
	// Only the claim and the pod: the class and CSIDriver are made above.
	docs := strings.Split(classManifests(refDriverName, "", "1Gi"), "---\n")
	rc.create(t, writeFile(t, work, "claim-pod.yaml", strings.Join(docs[1:], "---\n")))
	pvc, err := rc.admin.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the claim created: %v", err)
	}
	return rc, pvc
}

// TestRunReplayUnboundClaim: a replay of a pod whose claim the cluster has
// not bound is refused (exit 2, one line naming the claim) and calls
// nothing; with --provision-unbound it provisions a volume of its own
// (never pvc-<claim uid>, the cluster provisioner's name), deletes only
// that one, and sends the pod info the class's provisioner's CSIDriver
// asks for (no "no CSIDriver" warning).
func TestRunReplayUnboundClaim(t *testing.T) {
	work := workDir(t)
	rc, pvc := replayUnbound(t, work)
	drv := startRefDriver(t, work)
	ep := "unix://" + drv.Sock
	clusterName := "pvc-" + string(pvc.UID)
	// The cluster's volume, as its provisioner would have named it, on
	// the driver already (made by a run of the same claim, kept).
	own := writeFile(t, work, "cluster-volume.yaml", strings.ReplaceAll(classManifests(refDriverName, "", "1Gi"), claimUID, string(pvc.UID)))
	wantCode(t, runSim(t, "run", "-f", own, "--endpoint", ep, "--root-dir", filepath.Join(work, "root-cluster"), "--node-name", simNode, "--keep-volumes"), 0)
	clusterVolume := filepath.Join(work, "refdata", clusterName)
	if _, err := os.Stat(clusterVolume); err != nil {
		t.Fatalf("the cluster's volume was not made: %v", err)
	}
	defer func() {
		if _, err := os.Stat(clusterVolume); err != nil {
			t.Errorf("the cluster's volume %s is gone after the replays: %v", clusterName, err)
		}
	}()

	refused := runSim(t, "run", "--kubeconfig", rc.kubeconfig, "--pod", "default/db", "--endpoint", ep, "--node-name", simNode, "-o", "json")
	wantCode(t, refused, 2)
	oneLineError(t, refused, "claim default/data is not bound", "Pending", "--provision-unbound")
	if cs := calls(parseTrace(t, refused)); len(cs) != 0 {
		t.Errorf("a refused replay called the driver: %v", methods(cs))
	}

	r := runSim(t, "run", "--kubeconfig", rc.kubeconfig, "--pod", "default/db", "--endpoint", ep, "--node-name", simNode, "-o", "json", "--provision-unbound")
	wantCode(t, r, 0)
	if strings.Contains(r.Stderr, "no CSIDriver") || strings.Contains(r.Stdout, "no CSIDriver") {
		t.Errorf("the class's provisioner's CSIDriver was not read:\n%s", r)
	}
	cs := calls(parseTrace(t, r))
	created := callOf(t, cs, "CreateVolume")
	name, _ := created.Request["name"].(string)
	if !strings.HasPrefix(name, "csi-kubelet-sim-") || !strings.HasSuffix(name, "-"+string(pvc.UID)) || name == clusterName {
		t.Errorf("CreateVolume name %q, want csi-kubelet-sim-<run id>-%s", name, pvc.UID)
	}
	vol, _ := created.Response["volume"].(map[string]any)
	handle, _ := vol["volume_id"].(string)
	for _, c := range cs {
		if strings.Contains(c.Raw, clusterName) {
			t.Errorf("%s names the cluster provisioner's volume %s", c.Method, clusterName)
		}
		if c.Method == "DeleteVolume" && c.Request["volume_id"] != handle {
			t.Errorf("DeleteVolume of %v, not the volume this run created (%s)", c.Request["volume_id"], handle)
		}
	}
	callOf(t, cs, "DeleteVolume")
	pub := callOf(t, cs, "NodePublishVolume")
	vc, _ := pub.Request["volume_context"].(map[string]any)
	want := map[string]string{"csi.storage.k8s.io/pod.name": "db", "csi.storage.k8s.io/pod.namespace": "default",
		"csi.storage.k8s.io/serviceAccount.name": "default", "csi.storage.k8s.io/ephemeral": "false"}
	for k, v := range want {
		if vc[k] != v {
			t.Errorf("NodePublishVolume volume_context[%s] = %v, want %q (the cluster's kubelet's pod info)", k, vc[k], v)
		}
	}
	if vc["csi.storage.k8s.io/pod.uid"] == nil {
		t.Errorf("NodePublishVolume volume_context lacks the pod's UID: %v", vc)
	}
}
