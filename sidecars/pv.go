package sidecars

import (
	"context"
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// createVolume calls CreateVolume, written down before (the request, so
// that `cleanup` can ask again for a handle it never got) and after (the
// handle).
func (c *Controllers) createVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	rec, err := c.openRecord()
	if err != nil {
		return nil, err
	}
	h, err := holdVolume(c.cfg.HoldersDir, c.driver, c.cfg.Endpoint, req.Name, c.cfg.RootDir)
	if err != nil {
		return nil, err
	}
	if h != nil {
		c.mu.Lock()
		c.holds[req.Name] = h
		c.mu.Unlock()
	}
	if err := rec.write(entry{Kind: kindCreating, Name: req.Name, Request: requestJSON(req)}); err != nil {
		return nil, err
	}
	cctx, cancel := c.callContext(ctx, "provision", "Provision", req.Name)
	defer cancel()
	resp, err := csi.NewControllerClient(c.cfg.Conn).CreateVolume(cctx, req)
	if err != nil {
		if uncertain(err) {
			// The volume may exist (the provisioner retries such a
			// call in the background): Finish asks again and deletes
			// it, and the record keeps the intent for `cleanup`.
			c.mu.Lock()
			c.uncertain = append(c.uncertain, req)
			c.mu.Unlock()
			return nil, err
		}
		return nil, errors.Join(err, rec.write(entry{Kind: kindFailed, Name: req.Name}))
	}
	if err := rec.write(entry{Kind: kindCreated, Name: req.Name, Handle: resp.GetVolume().GetVolumeId()}); err != nil {
		return nil, err
	}
	return resp, nil
}

// abandon deletes a volume the provisioner made but cannot use, as its
// cleanupVolume does (a capacity below the claim's request).
func (c *Controllers) abandon(ctx context.Context, req *csi.CreateVolumeRequest, handle string, claim *corev1.PersistentVolumeClaim, cause error) error {
	err := fmt.Errorf("external-provisioner: claim %s/%s: %w", claim.Namespace, claim.Name, cause)
	v := &Volume{Claim: claim.Namespace + "/" + claim.Name, Handle: handle, Request: req,
		PV: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: req.Name}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete}}}
	c.mu.Lock()
	c.volumes = append(c.volumes, v)
	c.mu.Unlock()
	if derr := c.deleteVolume(ctx, v, req.Secrets); derr != nil {
		return fmt.Errorf("%w. Cleanup of volume %s failed, volume is orphaned: %v", err, req.Name, derr)
	}
	return err
}

// buildPV is the PV the provisioner creates (Provision) and the
// provisioning library completes (claimRef, finalizer, annotation, class).
func (c *Controllers) buildPV(claim *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, p *prepared, vol *csi.Volume) (*corev1.PersistentVolume, error) {
	requested := p.req.GetCapacityRange().GetRequiredBytes()
	capBytes := vol.GetCapacityBytes()
	switch {
	case capBytes == 0:
		// 0 is "unknown" in CSI, which the API server refuses: the
		// claim's size is used.
		capBytes = requested
	case capBytes < requested:
		return nil, fmt.Errorf("created volume capacity %d less than requested capacity %d", capBytes, requested)
	}
	attrs := map[string]string{provisionerIDKey: c.identity}
	for k, v := range vol.GetVolumeContext() {
		attrs[k] = v
	}
	src := p.csi
	src.VolumeHandle = vol.GetVolumeId()
	src.VolumeAttributes = attrs
	block := claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock
	if !block {
		src.FSType = p.fsType
	}
	pv := &corev1.PersistentVolume{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.req.Name,
			Annotations: map[string]string{annProvisionedBy: sc.Provisioner, annDeletionSecretName: "", annDeletionSecretSpace: ""},
			Finalizers:  []string{pvFinalizer},
		},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:            claim.Spec.AccessModes,
			MountOptions:           sc.MountOptions,
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(capBytes, resource.BinarySI)},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: src},
			VolumeMode:             claim.Spec.VolumeMode,
			StorageClassName:       sc.Name,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	if ref := p.deleteSecret; ref != nil {
		pv.Annotations[annDeletionSecretName] = ref.Name
		pv.Annotations[annDeletionSecretSpace] = ref.Namespace
	}
	if sc.ReclaimPolicy != nil {
		pv.Spec.PersistentVolumeReclaimPolicy = *sc.ReclaimPolicy
	}
	if c.caps.topology() {
		pv.Spec.NodeAffinity = nodeAffinity(vol.GetAccessibleTopology())
	}
	return pv, nil
}

// bind adds the PV to the cluster and binds the claim to it, as the PV
// controller does once the provisioner has stored the PV.
func (c *Controllers) bind(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	src := manifests.Source{File: "(provisioned for claim " + claim.Namespace + "/" + claim.Name + ")", Doc: 1}
	if err := c.cfg.Cluster.Add(pv, src); err != nil {
		return c.inputErr(claim, fmt.Errorf("the provisioned PV: %w", err))
	}
	claim.Spec.VolumeName = pv.Name
	claim.Status.Phase = corev1.ClaimBound
	claim.Status.AccessModes = pv.Spec.AccessModes
	claim.Status.Capacity = pv.Spec.Capacity.DeepCopy()
	return nil
}

// selectedNode is the topology of the node the scheduler picked for a
// WaitForFirstConsumer claim (the pod's node, annotated on the claim), nil
// for Immediate binding.
func (c *Controllers) selectedNode(sc *storagev1.StorageClass, claim *corev1.PersistentVolumeClaim, pod *corev1.Pod) map[string]string {
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil
	}
	nodeName := pod.Spec.NodeName
	if nodeName == "" {
		nodeName = c.cfg.NodeName
	}
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[annSelectedNode] = nodeName
	topo := map[string]string{}
	for k, v := range c.reg.NodeLabels {
		topo[k] = v
	}
	return topo
}

// controllerText names where the controller was asked.
func (c *Controllers) controllerText() string {
	if c.cfg.Endpoint == "" {
		return "the node socket"
	}
	return c.cfg.Endpoint
}

// withClaim labels the provisioner's steps.
func withClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim, pvName string) context.Context {
	return csiclient.WithLabels(ctx, csiclient.Labels{Component: "provision", Operation: "Provision", Volume: pvName, Pod: claim.Namespace + "/" + claim.Name})
}

// uncertain tells whether a failed CreateVolume may have made the volume
// anyway: the call did not finish (the provisioner's checkError calls
// these ProvisioningInBackground).
func uncertain(err error) bool {
	switch status.Code(err) {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.Aborted:
		return true
	}
	return false
}
