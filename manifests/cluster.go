// Package manifests holds the objects a kubelet would read from the API
// server (CSIDriver, Pod, PersistentVolume, PersistentVolumeClaim, Secret,
// ServiceAccount, VolumeAttachment, Node), loaded from manifests with the
// API server's defaults applied, and remembers which file and document each
// came from so that errors can point at them.
package manifests

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Source is where an object was read: a file (or "-" for stdin), the
// document's 1-based index in it, and for List items the item's index.
type Source struct {
	File string
	Doc  int
	Item int // 0 when the object is not a List item
	// Line is the file line a problem is on; 0 for an object's source.
	Line int
}

func (s Source) String() string {
	var out string
	switch {
	case s.File == "":
		return "(built in)"
	case s.Doc == 0:
		out = s.File
	case s.Item > 0:
		out = fmt.Sprintf("%s: document %d, items[%d]", s.File, s.Doc, s.Item-1)
	default:
		out = fmt.Sprintf("%s: document %d", s.File, s.Doc)
	}
	if s.Line > 0 {
		out += fmt.Sprintf(": line %d", s.Line)
	}
	return out
}

// Object is the source of the object itself, without a problem's line.
func (s Source) Object() Source { s.Line = 0; return s }

// Cluster is the API server's view, as far as the kubelet reads it.
type Cluster struct {
	csiDrivers map[string]*storagev1.CSIDriver
	pods       []*corev1.Pod
	podIndex   map[string]*corev1.Pod
	pvs        map[string]*corev1.PersistentVolume
	pvcs       map[string]*corev1.PersistentVolumeClaim
	secrets    map[string]*corev1.Secret
	sas        map[string]*corev1.ServiceAccount
	vas        map[string]*storagev1.VolumeAttachment
	nodes      map[string]*corev1.Node
	classes    map[string]*storagev1.StorageClass
	namespaces map[string]*corev1.Namespace
	webhooks   map[string]*admissionregistrationv1.MutatingWebhookConfiguration
	sources    map[string]Source
}

// New returns an empty cluster.
func New() *Cluster {
	return &Cluster{
		csiDrivers: map[string]*storagev1.CSIDriver{},
		podIndex:   map[string]*corev1.Pod{},
		pvs:        map[string]*corev1.PersistentVolume{},
		pvcs:       map[string]*corev1.PersistentVolumeClaim{},
		secrets:    map[string]*corev1.Secret{},
		sas:        map[string]*corev1.ServiceAccount{},
		vas:        map[string]*storagev1.VolumeAttachment{},
		nodes:      map[string]*corev1.Node{},
		classes:    map[string]*storagev1.StorageClass{},
		namespaces: map[string]*corev1.Namespace{},
		webhooks:   map[string]*admissionregistrationv1.MutatingWebhookConfiguration{},
		sources:    map[string]Source{},
	}
}

func key(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// Add stores an object (defaults already applied). A second object of the
// same kind, namespace and name is an error, as a create would be.
func (c *Cluster) Add(obj any, src Source) error {
	k, err := objectKey(obj)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if prev, dup := c.sources[k]; dup {
		return &InputError{Source: src, Object: ObjectName(obj), Err: fmt.Errorf("%s already defined at %s", ObjectName(obj), prev)}
	}
	c.sources[k] = src
	c.store(obj)
	return nil
}

// ObjectName names an object as kubectl does in messages: its kind, then
// namespace/name or, cluster-scoped, its name ("Pod default/web",
// "CSIDriver hostpath.csi.k8s.io").
func ObjectName(obj any) string {
	k, err := objectKey(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	kind, rest, _ := strings.Cut(k, "/")
	ns, name, _ := strings.Cut(rest, "/")
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

func objectKey(obj any) (string, error) {
	var k string
	switch o := obj.(type) {
	case *corev1.Namespace:
		k = key("Namespace", "", o.Name)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		k = key("MutatingWebhookConfiguration", "", o.Name)
	case *storagev1.CSIDriver:
		k = key("CSIDriver", "", o.Name)
	case *corev1.Pod:
		k = key("Pod", o.Namespace, o.Name)
	case *corev1.PersistentVolume:
		k = key("PersistentVolume", "", o.Name)
	case *corev1.PersistentVolumeClaim:
		k = key("PersistentVolumeClaim", o.Namespace, o.Name)
	case *corev1.Secret:
		k = key("Secret", o.Namespace, o.Name)
	case *corev1.ServiceAccount:
		k = key("ServiceAccount", o.Namespace, o.Name)
	case *storagev1.VolumeAttachment:
		k = key("VolumeAttachment", "", o.Name)
	case *corev1.Node:
		k = key("Node", "", o.Name)
	case *storagev1.StorageClass:
		k = key("StorageClass", "", o.Name)
	default:
		return "", fmt.Errorf("unsupported object %T", obj)
	}
	return k, nil
}

// store puts an object in its map (a pod in the list), replacing one of
// the same name.
func (c *Cluster) store(obj any) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		c.namespaces[o.Name] = o
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		c.webhooks[o.Name] = o
	case *storagev1.CSIDriver:
		c.csiDrivers[o.Name] = o
	case *corev1.Pod:
		for i, p := range c.pods {
			if p.Namespace == o.Namespace && p.Name == o.Name {
				c.pods[i] = o
				c.podIndex[o.Namespace+"/"+o.Name] = o
				return
			}
		}
		c.pods = append(c.pods, o)
		c.podIndex[o.Namespace+"/"+o.Name] = o
	case *corev1.PersistentVolume:
		c.pvs[o.Name] = o
	case *corev1.PersistentVolumeClaim:
		c.pvcs[o.Namespace+"/"+o.Name] = o
	case *corev1.Secret:
		c.secrets[o.Namespace+"/"+o.Name] = o
	case *corev1.ServiceAccount:
		c.sas[o.Namespace+"/"+o.Name] = o
	case *storagev1.VolumeAttachment:
		c.vas[o.Name] = o
	case *corev1.Node:
		c.nodes[o.Name] = o
	case *storagev1.StorageClass:
		c.classes[o.Name] = o
	}
}

// SourceOf tells where an object came from.
func (c *Cluster) SourceOf(kind, namespace, name string) Source {
	return c.sources[key(kind, namespace, name)]
}

// Count counts the objects the cluster holds.
func (c *Cluster) Count() int { return len(c.sources) }

// CSIDriver returns the CSIDriver object with that name, if any.
func (c *Cluster) CSIDriver(name string) (*storagev1.CSIDriver, bool) {
	d, ok := c.csiDrivers[name]
	return d, ok
}

// CSIDrivers returns every CSIDriver object, sorted by name.
func (c *Cluster) CSIDrivers() []*storagev1.CSIDriver {
	out := make([]*storagev1.CSIDriver, 0, len(c.csiDrivers))
	for _, d := range c.csiDrivers {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Pods returns the pods in the order they were read.
func (c *Cluster) Pods() []*corev1.Pod { return c.pods }

// Pod returns the pod with that namespace and name, if any.
func (c *Cluster) Pod(namespace, name string) (*corev1.Pod, bool) {
	p, ok := c.podIndex[namespace+"/"+name]
	return p, ok
}

// PersistentVolume returns the PV with that name, if any.
func (c *Cluster) PersistentVolume(name string) (*corev1.PersistentVolume, bool) {
	pv, ok := c.pvs[name]
	return pv, ok
}

// PersistentVolumeClaim returns the claim, if any.
func (c *Cluster) PersistentVolumeClaim(namespace, name string) (*corev1.PersistentVolumeClaim, bool) {
	pvc, ok := c.pvcs[namespace+"/"+name]
	return pvc, ok
}

// Secret returns the secret, if any.
func (c *Cluster) Secret(namespace, name string) (*corev1.Secret, bool) {
	s, ok := c.secrets[namespace+"/"+name]
	return s, ok
}

// ServiceAccount returns the service account, if any.
func (c *Cluster) ServiceAccount(namespace, name string) (*corev1.ServiceAccount, bool) {
	sa, ok := c.sas[namespace+"/"+name]
	return sa, ok
}

// VolumeAttachment returns the VolumeAttachment with that name, if any.
func (c *Cluster) VolumeAttachment(name string) (*storagev1.VolumeAttachment, bool) {
	va, ok := c.vas[name]
	return va, ok
}

// Node returns the Node object with that name, if any.
func (c *Cluster) Node(name string) (*corev1.Node, bool) {
	n, ok := c.nodes[name]
	return n, ok
}

// PersistentVolumes returns every PV, sorted by name.
func (c *Cluster) PersistentVolumes() []*corev1.PersistentVolume {
	out := make([]*corev1.PersistentVolume, 0, len(c.pvs))
	for _, pv := range c.pvs {
		out = append(out, pv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ExpandPersistentVolumes makes every CSI PV size big, as the external
// resizer does after ControllerExpandVolume, while each bound claim's
// status.capacity keeps the old size: what the kubelet sees before it
// expands on the node.
func (c *Cluster) ExpandPersistentVolumes(size resource.Quantity) {
	for _, pv := range c.pvs {
		if pv.Spec.CSI == nil {
			continue
		}
		old := pv.Spec.Capacity[corev1.ResourceStorage]
		if pv.Spec.Capacity == nil {
			pv.Spec.Capacity = corev1.ResourceList{}
		}
		pv.Spec.Capacity[corev1.ResourceStorage] = size
		for _, pvc := range c.pvcs {
			if pvc.Spec.VolumeName != pv.Name {
				continue
			}
			if pvc.Status.Capacity == nil {
				pvc.Status.Capacity = corev1.ResourceList{}
			}
			if _, set := pvc.Status.Capacity[corev1.ResourceStorage]; !set {
				pvc.Status.Capacity[corev1.ResourceStorage] = old
			}
		}
	}
}
