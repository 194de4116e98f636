package cluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// validate refuses what the API server would refuse outright and the
// kubelet could not work with, naming the field by its path. Full CSIDriver
// validation is the `validate` command's job.
func validate(obj any) error {
	switch o := obj.(type) {
	case *storagev1.CSIDriver:
		return requireName(o.Name)
	case *storagev1.VolumeAttachment:
		return requireName(o.Name)
	case *corev1.Node:
		return requireName(o.Name)
	case *corev1.Secret:
		return requireName(o.Name)
	case *corev1.ServiceAccount:
		return requireName(o.Name)
	case *corev1.PersistentVolumeClaim:
		return requireName(o.Name)
	case *corev1.PersistentVolume:
		if err := requireName(o.Name); err != nil {
			return err
		}
		if c := o.Spec.CSI; c != nil {
			if c.Driver == "" {
				return fmt.Errorf("spec.csi.driver: Required value")
			}
			if c.VolumeHandle == "" {
				return fmt.Errorf("spec.csi.volumeHandle: Required value")
			}
		}
	case *corev1.Pod:
		if err := requireName(o.Name); err != nil {
			return err
		}
		return validatePodVolumes(o)
	}
	return nil
}

func requireName(name string) error {
	if name == "" {
		return fmt.Errorf("metadata.name: Required value")
	}
	return nil
}

func validatePodVolumes(p *corev1.Pod) error {
	seen := map[string]bool{}
	for i, v := range p.Spec.Volumes {
		path := fmt.Sprintf("spec.volumes[%d]", i)
		if v.Name == "" {
			return fmt.Errorf("%s.name: Required value", path)
		}
		if seen[v.Name] {
			return fmt.Errorf("%s.name: Duplicate value: %q", path, v.Name)
		}
		seen[v.Name] = true
		if v.CSI != nil && v.CSI.Driver == "" {
			return fmt.Errorf("%s.csi.driver: Required value", path)
		}
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "" {
			return fmt.Errorf("%s.persistentVolumeClaim.claimName: Required value", path)
		}
	}
	return nil
}
