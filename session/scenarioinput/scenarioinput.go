// Package scenarioinput answers what conformance's scenario volumes
// follow in the user's input: the --testdriver definition (Kubernetes'
// test driver file: its StorageClass, fsType, mount options, size and
// inline volumes), else the first given Pod with a volume of the driver
// (its inline volume's attributes, its claim's StorageClass and size),
// with --volume-attributes on top.
package scenarioinput

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance/testdriver"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
)

// TestDriver reads --testdriver (file) strictly, and what it says of the
// provisioned volumes (nil: nothing); a bad file is bad input (exit 2),
// named with its field.
func TestDriver(file string, defaults manifests.Defaults, warn func(string)) (*testdriver.Definition, *conformance.VolumeClass, error) {
	def, err := testdriver.Load(file)
	if err != nil {
		return nil, nil, exitcode.With(exitcode.Usage, fmt.Errorf("--testdriver: %w", err))
	}
	class, err := volumeClass(file, def, defaults, warn)
	if err != nil {
		return def, nil, exitcode.With(exitcode.Usage, fmt.Errorf("--testdriver: %w", err))
	}
	if n := len(def.InlineVolumes); n > 1 {
		warn(fmt.Sprintf("%s: InlineVolumes: the first of the %d drives the inline volumes", file, n))
	}
	return def, class, nil
}

// InlineFromTestDriver gives the inline volumes the definition's first
// InlineVolumes entry: its attributes (attrs, --volume-attributes, on
// top) and its readOnly (or --read-only's).
func InlineFromTestDriver(def *testdriver.Definition, attrs map[string]string, cfg *conformance.Config) {
	if def == nil || len(def.InlineVolumes) == 0 {
		return
	}
	v := def.InlineVolumes[0]
	// What the command line says wins over the file.
	cfg.InlineAttributes = map[string]string{}
	maps.Copy(cfg.InlineAttributes, v.Attributes)
	maps.Copy(cfg.InlineAttributes, attrs)
	cfg.InlineReadOnly = cfg.InlineReadOnly || v.ReadOnly
}

// volumeClass is what the definition says of the provisioned volumes:
// StorageClass.FromFile's parameters (without the external-provisioner's
// own csi.storage.k8s.io/ keys), fsType and mountOptions, then
// SupportedFsType (when the class names none and the default "" is not
// supported), SupportedMountOption and RequiredMountOption, and
// SupportedSizeRange.Min as the size. Nil when it says nothing of them.
func volumeClass(file string, def *testdriver.Definition, defaults manifests.Defaults, warn func(string)) (*conformance.VolumeClass, error) {
	info := def.DriverInfo
	c := &conformance.VolumeClass{}
	if name := def.StorageClass.FromFile; name != "" {
		path := testdriver.Path(file, name)
		loader := &manifests.Loader{Defaults: defaults, Warn: warn}
		cl, err := loader.Load([]string{path})
		if err != nil {
			return nil, fmt.Errorf("%s: StorageClass.FromFile: %w", file, err)
		}
		classes := cl.StorageClasses()
		if len(classes) != 1 {
			return nil, fmt.Errorf("%s: StorageClass.FromFile: %s has %d StorageClass objects, want one", file, path, len(classes))
		}
		c = classOf(classes[0])
	}
	if _, dflt := info.SupportedFsType[""]; c.FsType == "" && !dflt && len(info.SupportedFsType) > 0 {
		c.FsType = slices.Sorted(maps.Keys(info.SupportedFsType))[0]
	}
	for _, set := range []map[string]struct{}{info.SupportedMountOption, info.RequiredMountOption} {
		for _, opt := range slices.Sorted(maps.Keys(set)) {
			if !slices.Contains(c.MountOptions, opt) {
				c.MountOptions = append(c.MountOptions, opt)
			}
		}
	}
	if min := info.SupportedSizeRange.Min; min != "" {
		q, err := resource.ParseQuantity(min)
		if err != nil {
			return nil, fmt.Errorf("%s: DriverInfo.SupportedSizeRange.Min: %q: %w", file, min, err)
		}
		c.Size = q
	}
	if c.Parameters == nil && c.FsType == "" && len(c.MountOptions) == 0 && c.Size.IsZero() {
		return nil, nil
	}
	return c, nil
}

// classOf is what a StorageClass says of its volumes: its parameters
// without the external-provisioner's own csi.storage.k8s.io/ keys, its
// fsType (csi.storage.k8s.io/fstype, or fstype), its mountOptions.
func classOf(sc *storagev1.StorageClass) *conformance.VolumeClass {
	c := &conformance.VolumeClass{Parameters: map[string]string{}}
	for k, v := range sc.Parameters {
		switch {
		case k == "csi.storage.k8s.io/fstype" || strings.EqualFold(k, "fstype"):
			c.FsType = v
		case !strings.HasPrefix(k, "csi.storage.k8s.io/"):
			c.Parameters[k] = v
		}
	}
	c.MountOptions = slices.Clone(sc.MountOptions)
	return c
}

// FromPods makes the first given Pod with a CSI volume of the driver the
// source of the scenarios' volumes: its first inline volume's
// volumeAttributes and readOnly, its first claim's StorageClass (see
// classOf) and requested size, with attrs (--volume-attributes) on top.
// What it took is warned about.
func FromPods(c *manifests.Cluster, driver string, attrs map[string]string, cfg *conformance.Config, warn func(string)) {
	if c == nil {
		return
	}
	for _, pod := range c.Pods() {
		var took []string
		inline, claim := false, false
		for _, v := range pod.Spec.Volumes {
			switch {
			case v.CSI != nil && v.CSI.Driver == driver && !inline:
				inline = true
				cfg.InlineAttributes = map[string]string{}
				maps.Copy(cfg.InlineAttributes, v.CSI.VolumeAttributes)
				maps.Copy(cfg.InlineAttributes, attrs)
				cfg.InlineReadOnly = cfg.InlineReadOnly || (v.CSI.ReadOnly != nil && *v.CSI.ReadOnly)
				took = append(took, fmt.Sprintf("the inline volume %q (volumeAttributes, readOnly %v)", v.Name, cfg.InlineReadOnly))
			case v.PersistentVolumeClaim != nil && !claim:
				if class := claimClass(c, pod.Namespace, v.PersistentVolumeClaim.ClaimName, driver); class != nil {
					claim = true
					cfg.Class = class
					took = append(took, fmt.Sprintf("the claim %q's StorageClass and size", v.PersistentVolumeClaim.ClaimName))
				}
			}
		}
		if len(took) > 0 {
			warn(fmt.Sprintf("the scenarios' volumes follow pod %s/%s: %s", pod.Namespace, pod.Name, strings.Join(took, ", ")))
			return
		}
	}
	if n := len(c.Pods()); n > 0 {
		warn(fmt.Sprintf("conformance builds its own pods: none of the %d Pod(s) given has a CSI volume of %s, so they are ignored", n, driver))
	}
}

// claimClass is the VolumeClass of a given claim whose StorageClass
// provisions with the driver; nil otherwise.
func claimClass(cl *manifests.Cluster, namespace, name, driver string) *conformance.VolumeClass {
	pvc, ok := cl.PersistentVolumeClaim(namespace, name)
	if !ok || pvc.Spec.StorageClassName == nil {
		return nil
	}
	sc, ok := cl.StorageClass(*pvc.Spec.StorageClassName)
	if !ok || sc.Provisioner != driver {
		return nil
	}
	c := classOf(sc)
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		c.Size = q
	}
	return c
}
