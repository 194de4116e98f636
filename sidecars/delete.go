package sidecars

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// delete is what follows the claim's deletion once the volume is
// detached: the provisioner's Delete for reclaimPolicy Delete (the
// class's default), with the deleter secrets the PV's annotations name;
// nothing for Retain, and nothing with --keep-volumes. A kept volume's
// handle is printed so that the user can find it.
func (c *Controllers) delete(ctx context.Context, v *Volume) error {
	lctx := csiclient.WithLabels(ctx, csiclient.Labels{Component: "provision", Operation: "Delete", Volume: v.PV.Name})
	switch {
	case c.cfg.KeepVolumes:
		v.Kept = true
		c.cfg.Trace.Note(lctx, false, fmt.Sprintf("--keep-volumes: volume %s of claim %s kept on the driver: handle %s", v.PV.Name, v.Claim, v.Handle))
		return c.record.write(entry{Kind: kindKept, Name: v.PV.Name, Handle: v.Handle})
	case v.PV.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete:
		v.Kept = true
		c.cfg.Trace.Note(lctx, false, fmt.Sprintf("reclaimPolicy %s: volume %s of claim %s kept on the driver: handle %s", v.PV.Spec.PersistentVolumeReclaimPolicy, v.PV.Name, v.Claim, v.Handle))
		return c.record.write(entry{Kind: kindKept, Name: v.PV.Name, Handle: v.Handle})
	}
	secrets, err := c.deleterSecrets(v.PV)
	if err != nil {
		v.Left = true
		return fmt.Errorf("external-provisioner: DeleteVolume %s (claim %s): %w; the volume is left on the driver: handle %s%s", v.PV.Name, v.Claim, err, v.Handle, c.hint())
	}
	if err := c.deleteVolume(ctx, v, secrets); err != nil {
		v.Left = true
		return fmt.Errorf("external-provisioner: DeleteVolume %s (claim %s): %w; the volume is left on the driver: handle %s%s", v.PV.Name, v.Claim, err, v.Handle, c.hint())
	}
	if c.api != nil && v.Deleted {
		return c.api.PVDeleted(ctx, v.PV)
	}
	return nil
}

// deleteVolume calls DeleteVolume and writes the deletion down, unless
// another live run holds the volume too (the same CreateVolume name on the
// same driver): then it is kept for that run, which deletes it.
func (c *Controllers) deleteVolume(ctx context.Context, v *Volume, secrets map[string]string) error {
	c.mu.Lock()
	h := c.holds[v.PV.Name]
	c.mu.Unlock()
	if h != nil {
		other, unlock, err := h.others()
		if err != nil {
			return err
		}
		defer unlock()
		if other != "" {
			v.Kept = true
			lctx := csiclient.WithLabels(ctx, csiclient.Labels{Component: "provision", Operation: "Delete", Volume: v.PV.Name})
			c.cfg.Trace.Note(lctx, false, fmt.Sprintf("volume %s of claim %s kept: in use by the run of root dir %s (the same CreateVolume name on the same driver gave both runs this volume); that run deletes it: handle %s", v.PV.Name, v.Claim, other, v.Handle))
			return c.record.write(entry{Kind: kindKept, Name: v.PV.Name, Handle: v.Handle})
		}
	}
	dctx, cancel := c.callContext(ctx, "provision", "Delete", v.PV.Name)
	defer cancel()
	if _, err := csi.NewControllerClient(c.cfg.Conn).DeleteVolume(dctx, &csi.DeleteVolumeRequest{VolumeId: v.Handle, Secrets: secrets}); err != nil {
		return err
	}
	v.Deleted = true
	return c.record.write(entry{Kind: kindDeleted, Name: v.PV.Name, Handle: v.Handle})
}

// deleterSecrets are the provisioner's secrets for DeleteVolume: the
// Secret the PV's provisioner-deletion-secret annotations name.
func (c *Controllers) deleterSecrets(pv *corev1.PersistentVolume) (map[string]string, error) {
	name, ns := pv.Annotations[annDeletionSecretName], pv.Annotations[annDeletionSecretSpace]
	if name == "" || ns == "" {
		return nil, nil
	}
	return c.secretValues(&corev1.SecretReference{Name: name, Namespace: ns})
}
