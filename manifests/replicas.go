package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Replica describes a copy of a pod for `load`: a fresh name and UID, and
// for every claim the pod uses, a fresh claim bound to a fresh PV whose
// volume handle carries the same suffix (Shared keeps the pod's claims, so
// that every copy mounts the same volumes), with the VolumeAttachment the
// attach/detach controller would have made for it.
type Replica struct {
	Suffix   string // appended to names and handles, e.g. "-r3"
	NodeName string
	Shared   bool
	// AttachmentName computes the VolumeAttachment name the kubelet reads.
	AttachmentName func(handle, driver, node string) string
}

// AddReplica adds a copy of pod as r describes and returns it.
func (c *Cluster) AddReplica(pod *corev1.Pod, r Replica) (*corev1.Pod, error) {
	p := pod.DeepCopy()
	p.Name += r.Suffix
	p.UID = replicaUID(pod.UID, r.Suffix)
	p.ResourceVersion = ""
	src := Source{File: "(replica of " + pod.Namespace + "/" + pod.Name + ")", Doc: 1}
	if !r.Shared {
		for i, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			claim, err := c.replicateClaim(p.Namespace, v.PersistentVolumeClaim.ClaimName, r, src)
			if err != nil {
				return nil, fmt.Errorf("replica of pod %s/%s: spec.volumes[%d] (%s): %w", pod.Namespace, pod.Name, i, v.Name, err)
			}
			p.Spec.Volumes[i].PersistentVolumeClaim.ClaimName = claim
		}
	}
	if err := c.Add(p, src); err != nil {
		return nil, err
	}
	return p, nil
}

// replicateClaim copies a claim, its PV and the PV's VolumeAttachment.
func (c *Cluster) replicateClaim(namespace, name string, r Replica, src Source) (string, error) {
	pvc, ok := c.PersistentVolumeClaim(namespace, name)
	if !ok {
		return "", fmt.Errorf("persistentvolumeclaims %q not found", name)
	}
	if pvc.Spec.VolumeName == "" && pvc.Spec.StorageClassName != nil {
		// A claim left to the provisioner: each copy is a claim of its
		// own, provisioned on its own.
		newPVC := pvc.DeepCopy()
		newPVC.Name += r.Suffix
		newPVC.UID = replicaUID(pvc.UID, r.Suffix)
		return newPVC.Name, c.Add(newPVC, src)
	}
	pv, ok := c.PersistentVolume(pvc.Spec.VolumeName)
	if !ok {
		return "", fmt.Errorf("PersistentVolume %q not found", pvc.Spec.VolumeName)
	}
	newPVC, newPV := pvc.DeepCopy(), pv.DeepCopy()
	newPVC.Name += r.Suffix
	newPVC.Spec.VolumeName = pv.Name + r.Suffix
	newPV.Name += r.Suffix
	if newPV.Spec.ClaimRef != nil {
		newPV.Spec.ClaimRef.Name = newPVC.Name
	}
	if pv.Spec.CSI != nil {
		newPV.Spec.CSI.VolumeHandle += r.Suffix
		if err := c.replicateAttachment(pv, newPV, r, src); err != nil {
			return "", err
		}
	}
	if err := c.Add(newPV, src); err != nil {
		return "", err
	}
	if err := c.Add(newPVC, src); err != nil {
		return "", err
	}
	return newPVC.Name, nil
}

func (c *Cluster) replicateAttachment(pv, newPV *corev1.PersistentVolume, r Replica, src Source) error {
	if r.AttachmentName == nil {
		return nil
	}
	driver := pv.Spec.CSI.Driver
	va, ok := c.VolumeAttachment(r.AttachmentName(pv.Spec.CSI.VolumeHandle, driver, r.NodeName))
	if !ok {
		return nil
	}
	nva := va.DeepCopy()
	nva.Name = r.AttachmentName(newPV.Spec.CSI.VolumeHandle, driver, r.NodeName)
	nva.Spec.Source = storagev1.VolumeAttachmentSource{PersistentVolumeName: &newPV.Name}
	return c.Add(nva, src)
}

// replicaUID derives a copy's UID from the original's, in the UUID form
// the API server gives, so that runs are reproducible.
func replicaUID(uid types.UID, suffix string) types.UID {
	h := sha256.Sum256([]byte(string(uid) + suffix))
	s := hex.EncodeToString(h[:16])
	return types.UID(s[0:8] + "-" + s[8:12] + "-4" + s[13:16] + "-8" + s[17:20] + "-" + s[20:32])
}
