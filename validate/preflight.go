package validate

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// The pre-flight: validate reports every problem of every file at once,
// each at its file, document and line, so that one edit pass fixes them
// all: what the loader could not read (syntax, unknown fields with a
// did-you-mean, invalid fields), what the objects name that the input does
// not hold, and the CSIDriver objects as the API server judges them.

// located is a finding with the line of the file it is about (0 when it
// is about no line: the live driver's findings).
type located struct {
	finding
	Line int `json:"line,omitempty"`

	src manifests.Source // for the order; File "" for the live driver's
}

// preflight places findings on their lines.
type preflight struct {
	loader *manifests.Loader
	c      *manifests.Cluster
}

// at is a finding about the field path of the object read at src.
func (p *preflight) at(src manifests.Source, obj, severity, path, msg string) located {
	return located{finding: finding{src.Object().String(), obj, severity, msg}, Line: p.loader.Line(src, path), src: src.Object()}
}

// problems turns what the loader refused into findings, one each.
func (p *preflight) problems(err error) []located {
	if err == nil {
		return nil
	}
	var errs []error
	if ps, ok := err.(manifests.Problems); ok {
		errs = ps
	} else {
		errs = []error{err}
	}
	out := make([]located, 0, len(errs))
	for _, e := range errs {
		var ie *manifests.InputError
		if !errors.As(e, &ie) {
			// A file that cannot be read: named by its path.
			src := "input"
			var pe *fs.PathError
			if errors.As(e, &pe) {
				src = pe.Path
				e = pe.Err
			}
			out = append(out, located{finding: finding{Source: src, Severity: "error", Message: e.Error()}})
			continue
		}
		out = append(out, located{finding: finding{ie.Source.Object().String(), ie.Object, "error", ie.Message()}, Line: ie.Source.Line, src: ie.Source.Object()})
	}
	return out
}

// references lists what the objects name that the input does not hold.
func (p *preflight) references() []located {
	var out []located
	for _, r := range p.c.MissingReferences() {
		out = append(out, p.at(r.Source, r.Object, r.Severity, r.Path, r.Message))
	}
	return out
}

// locate gives findings about an object ("CSIDriver x", "Pod ns/p") the
// line of the field their message starts with, or of the object.
func (p *preflight) locate(fs []finding) []located {
	out := make([]located, 0, len(fs))
	for _, f := range fs {
		l := located{finding: f}
		kind, name, ok := strings.Cut(f.Object, " ")
		if ok && !strings.HasPrefix(f.Source, "driver ") {
			ns, n, namespaced := strings.Cut(name, "/")
			if !namespaced {
				ns, n = "", name
			}
			if src := p.c.SourceOf(kind, ns, n); src.File != "" {
				l.Line = p.loader.Line(src, fieldPath(f.Message))
				l.src = src
			}
		}
		out = append(out, l)
	}
	return out
}

// dropValid removes the "valid" line of an object that has errors (an
// unknown field, a missing reference): it would contradict them; and the
// API server's warnings on such a CSIDriver, which it gives only to
// objects it accepts (WarningsOnCreate runs after decoding and
// validation).
func dropValid(fs []located) []located {
	bad := map[string]bool{}
	for _, f := range fs {
		if f.Severity == "error" {
			bad[f.Source+"\x00"+f.Object] = true
		}
	}
	out := fs[:0]
	for _, f := range fs {
		if (f.Severity == "info" && strings.HasPrefix(f.Message, "valid") || strategyWarning(f)) && bad[f.Source+"\x00"+f.Object] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// strategyWarning: a CSIDriver's warning that names a field is the API
// server's (manifests.CSIDriverWarnings); the simulator's own are prose.
func strategyWarning(f located) bool {
	return f.Severity == "warning" && strings.HasPrefix(f.Object, "CSIDriver ") && strings.HasPrefix(f.Message, "spec.")
}

// sort orders findings file by file (in the order the files were read)
// and document by document; within a document they keep their order.
func (p *preflight) sort(fs []located) {
	rank := map[string]int{}
	for i, f := range p.loader.Files() {
		rank[f] = i
	}
	key := func(f located) [3]int {
		if f.src.File == "" {
			return [3]int{len(rank), 0, 0}
		}
		return [3]int{rank[f.src.File], f.src.Doc, f.src.Item}
	}
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := key(fs[i]), key(fs[j])
		return slices.Compare(a[:], b[:]) < 0
	})
}

// fieldPath is the field path a message starts with, "" when none.
func fieldPath(msg string) string {
	for i := 0; i+1 < len(msg); i++ {
		switch msg[i] {
		case ' ', '"':
			return ""
		case ':':
			if msg[i+1] == ' ' {
				return msg[:i]
			}
		}
	}
	return ""
}

// liveDriver is what the driver on --endpoint says of itself.
type liveDriver struct {
	endpoint, name string
	nodeCaps       map[csi.NodeServiceCapability_RPC_Type]bool
}

func newLiveDriver(endpoint, name string, caps *csi.NodeGetCapabilitiesResponse) *liveDriver {
	d := &liveDriver{endpoint: endpoint, name: name, nodeCaps: map[csi.NodeServiceCapability_RPC_Type]bool{}}
	for _, c := range caps.GetCapabilities() {
		d.nodeCaps[c.GetRpc().GetType()] = true
	}
	return d
}

// podDrivers checks every CSI volume of every pod against the live
// driver: a volume of another driver waits for a registration that never
// comes, and a Secret the kubelet would only send in a call the driver
// does not have is never sent.
func (p *preflight) podDrivers(d *liveDriver) []located {
	var out []located
	for _, pod := range p.c.Pods() {
		src := p.c.SourceOf("Pod", pod.Namespace, pod.Name)
		obj := "Pod " + pod.Namespace + "/" + pod.Name
		for i, v := range pod.Spec.Volumes {
			path := fmt.Sprintf("spec.volumes[%d]", i)
			driver, pv := p.volumeDriver(pod.Namespace, v)
			if driver == "" || driver == d.name {
				if pv != nil {
					out = append(out, p.pvCapabilities(pv, d)...)
				}
				continue
			}
			out = append(out, p.at(src, obj, "mismatch", path, fmt.Sprintf(
				"%s: volume %s is of driver %q%s, but the driver on %s registers as %q: the kubelet would wait for %s to register (driver name %s not found in the list of registered CSI drivers)",
				path, v.Name, driver, manifests.DidYouMean(driver, []string{d.name}), d.endpoint, d.name, driver, driver)))
		}
	}
	return out
}

// volumeDriver is the driver of a pod volume (inline, or through its
// claim's PV) and the PV; "" when it is not a CSI volume of the input.
func (p *preflight) volumeDriver(ns string, v corev1.Volume) (string, *corev1.PersistentVolume) {
	if v.CSI != nil {
		return v.CSI.Driver, nil
	}
	if v.PersistentVolumeClaim == nil {
		return "", nil
	}
	pvc, ok := p.c.PersistentVolumeClaim(ns, v.PersistentVolumeClaim.ClaimName)
	if !ok {
		return "", nil
	}
	pv, ok := p.c.PersistentVolume(pvc.Spec.VolumeName)
	if !ok || pv.Spec.CSI == nil {
		return "", nil
	}
	return pv.Spec.CSI.Driver, pv
}

// pvCapabilities: the stage and expand Secrets go only with calls the
// driver announces in NodeGetCapabilities.
func (p *preflight) pvCapabilities(pv *corev1.PersistentVolume, d *liveDriver) []located {
	src := p.c.SourceOf("PersistentVolume", "", pv.Name)
	obj := "PersistentVolume " + pv.Name
	var out []located
	if pv.Spec.CSI.NodeStageSecretRef != nil && !d.nodeCaps[csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME] {
		out = append(out, p.at(src, obj, "warning", "spec.csi.nodeStageSecretRef",
			"spec.csi.nodeStageSecretRef is set, but the driver has no STAGE_UNSTAGE_VOLUME: the kubelet never calls NodeStageVolume, so the Secret is never sent"))
	}
	if pv.Spec.CSI.NodeExpandSecretRef != nil && !d.nodeCaps[csi.NodeServiceCapability_RPC_EXPAND_VOLUME] {
		out = append(out, p.at(src, obj, "warning", "spec.csi.nodeExpandSecretRef",
			"spec.csi.nodeExpandSecretRef is set, but the driver has no EXPAND_VOLUME node capability: the kubelet never calls NodeExpandVolume, so the Secret is never sent"))
	}
	return out
}
