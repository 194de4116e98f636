package realkubelet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

var errNotYet = errors.New("not yet")

// objects are a case's manifests.
type objects struct {
	driver  *storagev1.CSIDriver // nil: the case has none
	pvs     []*corev1.PersistentVolume
	pvcs    []*corev1.PersistentVolumeClaim
	pod     *corev1.Pod
	secrets []*corev1.Secret
	sas     []*corev1.ServiceAccount
	vas     []*storagev1.VolumeAttachment
	file    string // where they come from, for errors
	yaml    string
}

func loadSample(t *testing.T, sample string) objects {
	dir := filepath.Join(samplesDir, sample)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("sample %s: want one manifest file (%v)", sample, err)
	}
	file := filepath.Join(dir, entries[0].Name())
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return loadObjects(t, file, string(b))
}

// loadObjects decodes a case's manifests.
func loadObjects(t *testing.T, file, yaml string) objects {
	o := objects{file: file, yaml: yaml}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader([]byte(yaml))))
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
	if o.pod == nil || o.pod.UID == "" {
		t.Fatalf("%s: a case needs a Pod with a uid (the simulator gets the server's)", o.file)
	}
	return o
}

func (o *objects) add(t *testing.T, obj runtime.Object) {
	switch v := obj.(type) {
	case *storagev1.CSIDriver:
		o.driver = v
	case *corev1.PersistentVolume:
		o.pvs = append(o.pvs, v)
	case *corev1.PersistentVolumeClaim:
		o.pvcs = append(o.pvcs, v)
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

// ownedByPod tells whether a claim is a generic ephemeral volume's, owned
// by the pod: it can only be made once the pod has its server UID.
func ownedByPod(pvc *corev1.PersistentVolumeClaim) bool {
	for _, r := range pvc.OwnerReferences {
		if r.Kind == "Pod" {
			return true
		}
	}
	return false
}

// create puts the case's objects into the API as a cluster with a
// controller manager would have them: namespaces with their default
// ServiceAccount and root CA, the pod's ServiceAccount, Secrets, the
// CSIDriver, claims Bound to their volumes (each PV's claimRef with the
// claim's server UID), VolumeAttachments attached. Claims owned by the pod
// wait for it (createOwned). Everything is deleted at the test's cleanup
// of the case.
func (o objects) create(ctx context.Context, t *testing.T, s *stack) {
	c := s.client
	namespaces := map[string]bool{o.pod.Namespace: true}
	for _, sec := range o.secrets {
		namespaces[sec.Namespace] = true
	}
	for ns := range namespaces {
		s.namespace(ctx, t, ns)
	}
	for _, sa := range o.sas {
		sa = sa.DeepCopy()
		sa.UID = "" // the server's
		if _, err := c.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatalf("ServiceAccount %s: %v", sa.Name, err)
		}
		t.Cleanup(func() {
			_ = c.CoreV1().ServiceAccounts(sa.Namespace).Delete(context.Background(), sa.Name, metav1.DeleteOptions{})
		})
	}
	if sa := o.pod.Spec.ServiceAccountName; sa != "" && sa != "default" {
		s.serviceAccount(ctx, t, o.pod.Namespace, sa)
	}
	for _, sec := range o.secrets {
		if _, err := c.CoreV1().Secrets(sec.Namespace).Create(ctx, sec.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("Secret %s/%s: %v", sec.Namespace, sec.Name, err)
		}
		t.Cleanup(func() {
			_ = c.CoreV1().Secrets(sec.Namespace).Delete(context.Background(), sec.Name, metav1.DeleteOptions{})
		})
	}
	changed := s.useDriver(ctx, t, o.driver)
	for _, pvc := range o.pvcs {
		if !ownedByPod(pvc) {
			o.bind(ctx, t, s, pvc)
		}
	}
	for _, va := range o.vas {
		attach(ctx, t, s, va)
	}
	if changed {
		// The kubelet reads CSIDrivers through an informer: give it the
		// object before the pod (a missing CSIDriver means no pod info).
		time.Sleep(time.Second)
	}
}

// useDriver makes d the CSIDriver in the API (nil: none), and tells whether
// it changed. The one there stays when it is the same (most cases share
// their driver's spec): each change costs the kubelet's informer a second
// either way. The test's cleanup deletes the last one.
func (s *stack) useDriver(ctx context.Context, t *testing.T, d *storagev1.CSIDriver) bool {
	if s.driver != nil && d != nil && equality.Semantic.DeepEqual(s.driver.Spec, d.Spec) {
		return false
	}
	if s.driver == nil && d == nil {
		return false
	}
	if s.driver != nil {
		s.deleteDriver(t)
	}
	if d != nil {
		if _, err := s.client.StorageV1().CSIDrivers().Create(ctx, d.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("CSIDriver: %v", err)
		}
		s.driver = d.DeepCopy()
	}
	return true
}

// createOwned makes the claims owned by the pod, now that it has its
// server UID, as the ephemeral volume controller would.
func (o objects) createOwned(ctx context.Context, t *testing.T, s *stack, pod *corev1.Pod) {
	for _, pvc := range o.pvcs {
		if !ownedByPod(pvc) {
			continue
		}
		pvc = pvc.DeepCopy()
		for i := range pvc.OwnerReferences {
			pvc.OwnerReferences[i].UID = pod.UID
		}
		o.bind(ctx, t, s, pvc)
	}
}

// bind creates a claim and its volume, both Bound: the claim's status from
// the manifest when it has one (a resize in progress), else the volume's
// size and modes.
func (o objects) bind(ctx context.Context, t *testing.T, s *stack, want *corev1.PersistentVolumeClaim) {
	c := s.client
	pvc, err := c.CoreV1().PersistentVolumeClaims(want.Namespace).Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("PVC %s: %v", want.Name, err)
	}
	t.Cleanup(func() { s.deleteProtected(t, "persistentvolumeclaims", pvc.Namespace, pvc.Name) })
	var pv *corev1.PersistentVolume
	for _, v := range o.pvs {
		if v.Spec.ClaimRef != nil && v.Spec.ClaimRef.Name == pvc.Name && v.Spec.ClaimRef.Namespace == pvc.Namespace {
			pv = v.DeepCopy()
		}
	}
	if pv == nil {
		t.Fatalf("%s: no PersistentVolume for the claim %s/%s", o.file, pvc.Namespace, pvc.Name)
	}
	pv.Spec.ClaimRef.UID = pvc.UID
	if pv, err = c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("PV: %v", err)
	}
	t.Cleanup(func() { s.deleteProtected(t, "persistentvolumes", "", pv.Name) })
	pv.Status.Phase = corev1.VolumeBound
	if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("PV status: %v", err)
	}
	if want.Status.Phase != "" {
		pvc.Status = *want.Status.DeepCopy()
	} else {
		pvc.Status.AccessModes = pv.Spec.AccessModes
		pvc.Status.Capacity = pv.Spec.Capacity
	}
	pvc.Status.Phase = corev1.ClaimBound
	if _, err := c.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("PVC status: %v", err)
	}
}

// deleteProtected deletes a claim or a volume, with the finalizer the
// API server's admission put on it removed (no controller manager runs to
// do it).
func (s *stack) deleteProtected(t *testing.T, resource, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	var err error
	if resource == "persistentvolumes" {
		err = s.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			_, err = s.client.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
	} else {
		err = s.client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			_, err = s.client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete %s %s: %v", resource, name, err)
	}
}

// namespace makes a namespace as a cluster has it: its default
// ServiceAccount and the kube-root-ca.crt ConfigMap (which every pod's
// kube-api-access volume needs).
func (s *stack) namespace(ctx context.Context, t *testing.T, ns string) {
	c := s.client.CoreV1()
	if _, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Namespace %s: %v", ns, err)
	}
	s.serviceAccount(ctx, t, ns, "default")
	ca, err := os.ReadFile(filepath.Join(s.base, "apiserver", "apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns}, Data: map[string]string{"ca.crt": string(ca)}}
	if _, err := c.ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("ConfigMap %s/kube-root-ca.crt: %v", ns, err)
	}
}

// serviceAccount makes a ServiceAccount unless it exists (the API server's
// ServiceAccount admission refuses a pod whose account is missing).
func (s *stack) serviceAccount(ctx context.Context, t *testing.T, ns, name string) {
	o := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := s.client.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("ServiceAccount %s/%s: %v", ns, name, err)
	}
}

// deleteDriver removes the CSIDriver (the next case makes its own, of the
// same name) and waits until it is gone from the API.
func (s *stack) deleteDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.client.StorageV1().CSIDrivers()
	name := s.driver.Name
	s.driver = nil
	if err := c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete CSIDriver: %v", err)
		return
	}
	_, err := waitFor(ctx, nil, "CSIDriver deleted", 30*time.Second, func(ctx context.Context) error {
		if _, err := c.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return errNotYet
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	// No wait for the kubelet's informer here: a change of driver is
	// followed by create's second for it, in which the informer sees the
	// delete and then the new object, in order.
}

// attach does what external-attacher and the attach/detach controller would
// for a VolumeAttachment of the case: the object with its status (attached,
// the attachment metadata) and the volume in the Node's
// status.volumesAttached, which the kubelet waits for before it mounts.
// The cleanup deletes the object and empties volumesAttached.
func attach(ctx context.Context, t *testing.T, s *stack, va *storagev1.VolumeAttachment) {
	c := s.client.StorageV1().VolumeAttachments()
	created, err := c.Create(ctx, va.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("VolumeAttachment: %v", err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = c.Delete(bg, created.Name, metav1.DeleteOptions{})
		_, _ = s.client.CoreV1().Nodes().PatchStatus(bg, nodeName, []byte(`{"status":{"volumesAttached":null}}`))
	})
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
