package kubeletdiff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/difftable"
)

// input is one case as both sides get it.
type input struct {
	files      []string         // the manifests, as given to csi-kubelet-sim -f
	objects    []runtime.Object // the same objects as the API server would hold them
	pod        *corev1.Pod
	node       *corev1.Node
	nodeName   string
	driverName string

	phaseTimeout     time.Duration // how long a kubelet phase may take (0: the default)
	republish        bool          // one more pod sync after the mount
	republishVolumes int           // how many of the pod's volumes that republishes
	stats            bool          // one round of NodeGetVolumeStats
}

var externalVersions = schema.GroupVersions{corev1.SchemeGroupVersion, storagev1.SchemeGroupVersion}

// loadInput reads the manifests as the API server would store them: decoded
// with the API server's own scheme (k8s.io/kubernetes/pkg/api/legacyscheme),
// which applies its defaults (SetDefaults_CSIDriver, SetDefaults_Pod, ...)
// and converts through the internal types (a Secret's stringData becomes
// data), then back to the versioned objects. On top of that, what the rest
// of a cluster would have done before the kubelet sees the pod: namespaces
// defaulted, the pod's service account set (the ServiceAccount admission
// plugin), claims bound to their volumes (the PV controller: UID, phase,
// capacity, claimRef.uid), and a Node whose status lists the attached
// volumes (the attach/detach controller), unless a Node is given.
// Feature gates must already be set: defaults depend on them.
func loadInput(files []string, nodeName string) (*input, error) {
	in := &input{files: files, nodeName: nodeName}
	var docs [][]byte
	for _, f := range files {
		d, err := readDocs(f)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	decoder := legacyscheme.Codecs.UniversalDecoder()
	var (
		pods    []*corev1.Pod
		pvs     []*corev1.PersistentVolume
		pvcs    []*corev1.PersistentVolumeClaim
		drivers []*storagev1.CSIDriver
		vas     []*storagev1.VolumeAttachment
		node    *corev1.Node
		others  []runtime.Object
	)
	for _, doc := range docs {
		internal, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		obj, err := legacyscheme.Scheme.ConvertToVersion(internal, externalVersions)
		if err != nil {
			return nil, err
		}
		if m, err := meta.Accessor(obj); err == nil && m.GetNamespace() == "" && namespaced(obj) {
			m.SetNamespace("default")
		}
		switch o := obj.(type) {
		case *corev1.Pod:
			if o.Spec.ServiceAccountName == "" {
				o.Spec.ServiceAccountName = "default"
			}
			pods = append(pods, o)
		case *corev1.PersistentVolume:
			pvs = append(pvs, o)
		case *corev1.PersistentVolumeClaim:
			pvcs = append(pvcs, o)
		case *storagev1.CSIDriver:
			drivers = append(drivers, o)
		case *storagev1.VolumeAttachment:
			vas = append(vas, o)
		case *corev1.Node:
			node = o
		default:
			others = append(others, obj)
		}
	}
	if len(pods) != 1 {
		return nil, fmt.Errorf("the harness runs one pod per case, got %d", len(pods))
	}
	in.pod = pods[0]

	// The PV controller: claims bound to their volumes.
	for _, pvc := range pvcs {
		if pvc.UID == "" {
			pvc.UID = types.UID("pvc-" + pvc.Namespace + "-" + pvc.Name)
		}
		for _, pv := range pvs {
			if pv.Name != pvc.Spec.VolumeName {
				continue
			}
			if pv.Spec.ClaimRef == nil {
				pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name}
			}
			if pv.Spec.ClaimRef.Namespace == pvc.Namespace && pv.Spec.ClaimRef.Name == pvc.Name {
				pv.Spec.ClaimRef.UID = pvc.UID
				pv.Status.Phase = corev1.VolumeBound
				pvc.Status.Phase = corev1.ClaimBound
				pvc.Status.AccessModes = pv.Spec.AccessModes
				// A claim that records its capacity keeps it: below the
				// PV's, the kubelet expands during mount.
				if pvc.Status.Capacity == nil {
					pvc.Status.Capacity = pv.Spec.Capacity.DeepCopy()
				}
			}
		}
	}

	// The driver of the case: the CSIDriver's name, else the first CSI volume's.
	for _, d := range drivers {
		in.driverName = d.Name
	}
	driverOf := map[string]*storagev1.CSIDriver{}
	for _, d := range drivers {
		driverOf[d.Name] = d
	}

	// The attach/detach controller: volumes whose VolumeAttachment is
	// attached are listed in node.status.volumesAttached.
	if node == nil {
		node = &corev1.Node{}
		node.Name = nodeName
		for _, v := range in.pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			pv := boundPV(v.PersistentVolumeClaim.ClaimName, in.pod.Namespace, pvcs, pvs)
			if pv == nil || pv.Spec.CSI == nil {
				continue
			}
			d := driverOf[pv.Spec.CSI.Driver]
			if d != nil && d.Spec.AttachRequired != nil && !*d.Spec.AttachRequired {
				continue
			}
			name := difftable.AttachmentName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, nodeName)
			for _, va := range vas {
				if va.Name == name && va.Status.Attached {
					node.Status.VolumesAttached = append(node.Status.VolumesAttached, corev1.AttachedVolume{
						Name: corev1.UniqueVolumeName("kubernetes.io/csi/" + pv.Spec.CSI.Driver + "^" + pv.Spec.CSI.VolumeHandle),
					})
				}
			}
		}
	}
	for _, v := range in.pod.Spec.Volumes {
		switch {
		case in.driverName != "":
		case v.CSI != nil:
			in.driverName = v.CSI.Driver
		case v.PersistentVolumeClaim != nil:
			if pv := boundPV(v.PersistentVolumeClaim.ClaimName, in.pod.Namespace, pvcs, pvs); pv != nil && pv.Spec.CSI != nil {
				in.driverName = pv.Spec.CSI.Driver
			}
		}
		var d *storagev1.CSIDriver
		if v.CSI != nil {
			d = driverOf[v.CSI.Driver]
		} else if v.PersistentVolumeClaim != nil {
			if pv := boundPV(v.PersistentVolumeClaim.ClaimName, in.pod.Namespace, pvcs, pvs); pv != nil && pv.Spec.CSI != nil {
				d = driverOf[pv.Spec.CSI.Driver]
			}
		}
		if d != nil && d.Spec.RequiresRepublish != nil && *d.Spec.RequiresRepublish {
			in.republishVolumes++
		}
	}

	in.node = node
	in.objects = append(in.objects, in.pod, node)
	for _, o := range pvs {
		in.objects = append(in.objects, o)
	}
	for _, o := range pvcs {
		in.objects = append(in.objects, o)
	}
	for _, o := range drivers {
		in.objects = append(in.objects, o)
	}
	for _, o := range vas {
		in.objects = append(in.objects, o)
	}
	in.objects = append(in.objects, others...)
	return in, nil
}

func boundPV(claim, ns string, pvcs []*corev1.PersistentVolumeClaim, pvs []*corev1.PersistentVolume) *corev1.PersistentVolume {
	for _, pvc := range pvcs {
		if pvc.Name != claim || pvc.Namespace != ns {
			continue
		}
		for _, pv := range pvs {
			if pv.Name == pvc.Spec.VolumeName {
				return pv
			}
		}
	}
	return nil
}

func namespaced(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Pod, *corev1.PersistentVolumeClaim, *corev1.Secret, *corev1.ServiceAccount, *corev1.ConfigMap:
		return true
	}
	return false
}

// readDocs reads a file, or a directory's .yaml/.yml/.json files in name
// order, as csi-kubelet-sim -f does, into JSON documents.
func readDocs(path string) ([][]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var files []string
	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			switch strings.ToLower(filepath.Ext(e.Name())) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		sort.Strings(files)
	} else {
		files = []string{path}
	}
	var docs [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
				continue
			}
			var probe struct {
				Kind  string            `json:"kind"`
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(j, &probe); err == nil && probe.Kind == "List" {
				for _, item := range probe.Items {
					docs = append(docs, item)
				}
				continue
			}
			docs = append(docs, j)
		}
	}
	return docs, nil
}
