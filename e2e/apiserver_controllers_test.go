package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestAPIServerProvisionedObjects: with --apiserver, a provisioned volume
// is in the API server while the pod runs, as the cluster's controllers
// write it: the PV (its provisioner's annotation, claimRef, Bound), the
// claim bound to it (volumeName, bind-completed, Bound), the
// VolumeAttachment attached with the driver's publish_context as its
// attachmentMetadata, all read through the driver's kubeconfig; at the end
// the VolumeAttachment and the PV are deleted.
func TestAPIServerProvisionedObjects(t *testing.T) {
	apiserverHelper(t)
	work := workDir(t)
	drv := startRefDriver(t, work, "--controller-publish")
	root := filepath.Join(work, "root")
	kc := filepath.Join(work, "driver.kubeconfig")
	sim := startSim(t, "run", "--apiserver", "-f", sample(t, "provision"), "--endpoint", drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--driver-kubeconfig", kc, "--hold", "forever")
	waitOutput(t, sim, "NodePublishVolume", 3*time.Minute)
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	claim, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Phase != "Bound" || claim.Spec.VolumeName == "" || claim.Annotations["pv.kubernetes.io/bind-completed"] != "yes" {
		t.Errorf("claim: phase %q volumeName %q annotations %v, want Bound to its PV", claim.Status.Phase, claim.Spec.VolumeName, claim.Annotations)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the provisioned PV %q is not in the API server: %v", claim.Spec.VolumeName, err)
	}
	if pv.Status.Phase != "Bound" || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID || pv.Annotations["pv.kubernetes.io/provisioned-by"] != refDriverName || pv.Spec.CSI == nil {
		t.Errorf("PV %s: phase %q claimRef %+v annotations %v", pv.Name, pv.Status.Phase, pv.Spec.ClaimRef, pv.Annotations)
	}
	vas, err := cs.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vas.Items) != 1 {
		t.Fatalf("%d VolumeAttachments, want the provisioned volume's", len(vas.Items))
	}
	va := vas.Items[0]
	if va.Name != attachmentName(pv.Spec.CSI.VolumeHandle, refDriverName, simNode) || !va.Status.Attached || va.Spec.NodeName != simNode ||
		va.Spec.Source.PersistentVolumeName == nil || *va.Spec.Source.PersistentVolumeName != pv.Name {
		t.Errorf("VolumeAttachment %s: %+v", va.Name, va)
	}
	if len(va.Status.AttachmentMetadata) == 0 {
		t.Errorf("VolumeAttachment %s without the driver's publish_context as attachmentMetadata", va.Name)
	}
	_ = sim.cmd.Process.Signal(syscall.SIGINT)
	r := sim.wait(t, 2*time.Minute)
	wantCode(t, r, 0) // Ctrl-C ends --hold forever
	assertNoControlPlane(t, root)
	if ms := mountsUnder(root); len(ms) > 0 {
		t.Errorf("still mounted: %v", ms)
	}
	for _, want := range []string{"deleted VolumeAttachment " + va.Name, "deleted PersistentVolume " + pv.Name + " after DeleteVolume"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the trace lacks %q:\n%s", want, r.Stdout)
		}
	}
}
