package realkubelet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

var errNotYet = errors.New("not yet")

// objects are a sample's manifests.
type objects struct {
	driver  *storagev1.CSIDriver
	pv      *corev1.PersistentVolume
	pvc     *corev1.PersistentVolumeClaim
	pod     *corev1.Pod
	secrets []*corev1.Secret
	sas     []*corev1.ServiceAccount
	vas     []*storagev1.VolumeAttachment
	file    string // the sample's file
	yaml    string
}

func loadSample(t *testing.T, sample string) objects {
	dir := filepath.Join(samplesDir, sample)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("sample %s: want one manifest file (%v)", sample, err)
	}
	o := objects{file: filepath.Join(dir, entries[0].Name())}
	b, err := os.ReadFile(o.file)
	if err != nil {
		t.Fatal(err)
	}
	o.yaml = string(b)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", o.file, err)
		}
		o.add(t, obj)
	}
	if o.driver == nil || o.pod == nil {
		t.Fatalf("%s: a case needs a CSIDriver and a Pod", o.file)
	}
	return o
}

func (o *objects) add(t *testing.T, obj runtime.Object) {
	switch v := obj.(type) {
	case *storagev1.CSIDriver:
		o.driver = v
	case *corev1.PersistentVolume:
		o.pv = v
	case *corev1.PersistentVolumeClaim:
		o.pvc = v
	case *corev1.Pod:
		o.pod = v
	case *corev1.Secret:
		o.secrets = append(o.secrets, v)
	case *corev1.ServiceAccount:
		o.sas = append(o.sas, v)
	case *storagev1.VolumeAttachment:
		o.vas = append(o.vas, v)
	default:
		t.Fatalf("%s: a %T is not handled by this test", o.file, obj)
	}
}

// create puts the CSIDriver and the claim's PV and PVC (Bound, the PV's
// claimRef with the claim's server UID) into the API, as a cluster with a
// controller manager would have them.
func (o objects) create(ctx context.Context, t *testing.T, s *stack) {
	c := s.client
	if _, err := c.StorageV1().CSIDrivers().Create(ctx, o.driver.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("CSIDriver: %v", err)
	}
	t.Cleanup(func() { o.deleteDriver(t, s) })
	for _, sa := range o.sas {
		sa = sa.DeepCopy()
		sa.UID = "" // the server's
		if _, err := c.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatalf("ServiceAccount %s: %v", sa.Name, err)
		}
	}
	for _, sec := range o.secrets {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sec.Namespace}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("Namespace %s: %v", sec.Namespace, err)
		}
		if _, err := c.CoreV1().Secrets(sec.Namespace).Create(ctx, sec.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("Secret %s/%s: %v", sec.Namespace, sec.Name, err)
		}
	}
	if o.pvc != nil {
		pvc, err := c.CoreV1().PersistentVolumeClaims(o.pvc.Namespace).Create(ctx, o.pvc.DeepCopy(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("PVC: %v", err)
		}
		pv := o.pv.DeepCopy()
		pv.Spec.ClaimRef.UID = pvc.UID
		if pv, err = c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatalf("PV: %v", err)
		}
		pv.Status.Phase = corev1.VolumeBound
		if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("PV status: %v", err)
		}
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.AccessModes = pv.Spec.AccessModes
		pvc.Status.Capacity = pv.Spec.Capacity
		if _, err := c.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("PVC status: %v", err)
		}
	}
	for _, va := range o.vas {
		attach(ctx, t, s, va)
	}
	// The kubelet reads CSIDrivers through an informer: give it the
	// object before the pod (a missing CSIDriver means no pod info).
	time.Sleep(time.Second)
}

// deleteDriver removes the CSIDriver (the next case makes its own, of the
// same name) and waits until it is gone, and its informer's copy with it.
func (o objects) deleteDriver(t *testing.T, s *stack) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.client.StorageV1().CSIDrivers()
	if err := c.Delete(ctx, o.driver.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete CSIDriver: %v", err)
		return
	}
	_, err := waitFor(ctx, nil, "CSIDriver deleted", 30*time.Second, func(ctx context.Context) error {
		if _, err := c.Get(ctx, o.driver.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return errNotYet
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	time.Sleep(time.Second)
}

// runCase runs the pod through the whole kubelet, then through the
// simulator, and compares the driver's two streams.
func runCase(ctx context.Context, t *testing.T, s *stack, drv *driver, c Case, sim string, startup []recorder.Call, out string) {
	begin := time.Now()
	o := loadSample(t, c.Sample)
	o.create(ctx, t, s)

	mark := len(drv.rec.Calls())
	pod := o.pod.DeepCopy()
	pod.UID = ""                 // the server's, fed back to the simulator
	pod.Spec.NodeName = nodeName // no scheduler: bound at creation
	pod, err := s.client.CoreV1().Pods(o.pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Pod: %v", err)
	}
	d, err := drv.waitCount(ctx, mark, "NodePublishVolume", 1, 60*time.Second)
	if err != nil {
		t.Fatalf("pod %s created, no NodePublishVolume: %v\nkubelet log:\n%s", pod.Name, err, s.kubelet.tail(40))
	}
	t.Logf("pod created -> NodePublishVolume %.2fs", d.Seconds())
	drv.settle(ctx, t)

	zero := int64(0)
	deleted := time.Now()
	if err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	if _, err := drv.waitCount(ctx, mark, "NodeUnpublishVolume", 1, 60*time.Second); err != nil {
		t.Fatalf("pod deleted, no NodeUnpublishVolume: %v\nkubelet log:\n%s", err, s.kubelet.tail(40))
	}
	if staged(drv.rec.Calls()[mark:]) {
		if _, err := drv.waitCount(ctx, mark, "NodeUnstageVolume", 1, 60*time.Second); err != nil {
			t.Fatalf("pod deleted, no NodeUnstageVolume: %v\nkubelet log:\n%s", err, s.kubelet.tail(40))
		}
	}
	t.Logf("pod deleted -> teardown done %.2fs", time.Since(deleted).Seconds())
	drv.settle(ctx, t)
	kubeletCalls := append(append([]recorder.Call{}, startup...), drv.rec.Calls()[mark:]...)
	kubeletDone := time.Since(begin)

	simCalls := runSimulator(ctx, t, s, c, o, sim, string(pod.UID))
	kubelet := normalizeAll(kubeletCalls, kubeletRoot)
	simLines := normalizeAll(simCalls, simRoot(s, c))
	writeStreams(t, out, c.Name, kubelet, simLines)
	t.Logf("case: whole kubelet %.1fs, with the simulator %.1fs", kubeletDone.Seconds(), time.Since(begin).Seconds())
	if d := compareStreams(kubelet, simLines); d != "" {
		t.Errorf("the whole kubelet and csi-kubelet-sim differ:\n%s", d)
	}
}

func staged(calls []recorder.Call) bool {
	for _, c := range calls {
		if c.Short() == "NodeStageVolume" {
			return true
		}
	}
	return false
}

func simRoot(s *stack, c Case) string { return filepath.Join(s.base, "sim-root-"+c.Name) }

// runSimulator runs `csi-kubelet-sim run` on the sample with the server's
// pod UID, against a recording driver of its own, and returns its calls.
func runSimulator(ctx context.Context, t *testing.T, s *stack, c Case, o objects, sim, uid string) []recorder.Call {
	dir := filepath.Join(s.base, "sim-"+c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, c.Sample+".yaml")
	if !strings.Contains(o.yaml, string(o.pod.UID)) || o.pod.UID == "" {
		t.Fatalf("%s: the pod has no uid to replace", o.file)
	}
	writeFile(t, manifest, strings.ReplaceAll(o.yaml, string(o.pod.UID), uid))
	socket := filepath.Join(dir, "csi.sock")
	mkdirs(t, filepath.Join(dir, "images"))
	rec, err := recorder.Start(socket, recorderConfig(c.Caps, filepath.Join(dir, "images")), nil)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--endpoint", "unix://" + socket, "--root-dir", simRoot(s, c), "--node-name", nodeName,
		"--kubelet-version", "1.37", "--volume-stats-agg-period", "0", "--selinux=false", "-o", "json",
		"--service-account-key-file", s.saKey, "-f", manifest}
	args = append(args, c.SimArgs...)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, sim, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if left := rec.Stop(); len(left) > 0 {
		t.Errorf("the simulator's driver had to release: %v", left)
	}
	if runErr != nil {
		t.Fatalf("%s %s: %v\n%s%s", sim, strings.Join(args, " "), runErr, stdout.String(), stderr.String())
	}
	return rec.Calls()
}

// attach does what external-attacher and the attach/detach controller would
// for a VolumeAttachment of the sample: the object with its status
// (attached, the attachment metadata) and the volume in the Node's
// status.volumesAttached, which the kubelet waits for before it mounts.
func attach(ctx context.Context, t *testing.T, s *stack, va *storagev1.VolumeAttachment) {
	c := s.client.StorageV1().VolumeAttachments()
	created, err := c.Create(ctx, va.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("VolumeAttachment: %v", err)
	}
	created.Status = va.Status
	if _, err := c.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("VolumeAttachment status: %v", err)
	}
	pv, err := s.client.CoreV1().PersistentVolumes().Get(ctx, *va.Spec.Source.PersistentVolumeName, metav1.GetOptions{})
	if err != nil || pv.Spec.CSI == nil {
		t.Fatalf("the VolumeAttachment's CSI PV %s: %v", *va.Spec.Source.PersistentVolumeName, err)
	}
	// The CSI plugin's unique volume name: kubernetes.io/csi/<driver>^<handle>.
	name := "kubernetes.io/csi/" + pv.Spec.CSI.Driver + "^" + pv.Spec.CSI.VolumeHandle
	patch := fmt.Sprintf(`{"status":{"volumesAttached":[{"name":%q,"devicePath":""}]}}`, name)
	if _, err := s.client.CoreV1().Nodes().PatchStatus(ctx, nodeName, []byte(patch)); err != nil {
		t.Fatalf("Node status volumesAttached: %v", err)
	}
}
