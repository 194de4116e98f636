// Package livecluster reads one pod, and every object its volumes make a
// kubelet read, from a running cluster, read-only: `run --kubeconfig FILE
// --pod NAMESPACE/NAME` replays it against a local driver. Only gets of
// named objects: never a list (of Secrets or anything else), never a
// write.
package livecluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// Pod is what was read for one pod.
type Pod struct {
	Pod *corev1.Pod
	// Objects are the pod and every object read, in the order read, each
	// once, as the API server returned them (UIDs, defaults and all).
	Objects []any
	// Missing are the objects the pod's volumes name that the cluster
	// does not hold (or that the kubeconfig's user may not read): the run
	// goes on without them, as a kubelet would, and says so.
	Missing []Missing
}

// Missing is an object named by another that could not be read.
type Missing struct {
	Object string // "Secret default/creds"
	By     string // "PersistentVolume pv-1 spec.csi.nodePublishSecretRef"
	Reason string // the API server's message
}

// NotReadError: the pod itself could not be read (not found, forbidden):
// bad input, named, with the API server's message.
type NotReadError struct {
	Object string
	Err    error
}

func (e *NotReadError) Error() string {
	return fmt.Sprintf("%s: %s", e.Object, apiMessage(e.Err))
}

func (e *NotReadError) Unwrap() error { return e.Err }

// UnreachableError: the API server did not answer (an environment
// problem).
type UnreachableError struct {
	Host string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("the cluster at %s cannot be reached: %v", e.Host, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Read reads the pod namespace/name and what its volumes reference:
// claims, their PersistentVolumes and StorageClasses, CSIDrivers, the
// Secrets of the PVs' and inline volumes' secret refs and of the classes'
// secret parameters, the VolumeAttachments of attachable volumes on
// nodeName (the pod's node when empty), the pod's ServiceAccount and its
// Node.
//
// The whole read has one deadline (cfg.Deadline); the claims, their PVs
// and their VolumeAttachments are fetched a few at a time (a pod may have
// thousands of volumes), the rest one by one.
func Read(ctx context.Context, cfg *Config, namespace, name, nodeName string) (*Pod, error) {
	deadline := cfg.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	r := &reader{c: cfg, host: cfg.Host, seen: map[string]bool{}, fetched: map[string]fetched{}, deadline: deadline}
	pod := &corev1.Pod{}
	if err := cfg.get(ctx, path("", "v1", "pods", namespace, name), pod); err != nil {
		if isAPIError(err) {
			return nil, &NotReadError{Object: "Pod " + namespace + "/" + name, Err: err}
		}
		return nil, r.notAnswered(ctx, err)
	}
	r.out.Pod = pod
	r.keep("Pod", pod.Namespace, pod.Name, pod)
	if nodeName == "" {
		nodeName = pod.Spec.NodeName
	}
	if err := r.podObjects(ctx, pod, nodeName); err != nil {
		return nil, err
	}
	return &r.out, nil
}

// reader reads each object once and remembers what it could not read.
type reader struct {
	c    *Config
	host string
	seen map[string]bool
	out  Pod
	// fetched are answers read ahead (prefetch), by object key.
	fetched  map[string]fetched
	deadline time.Duration
}

// fetched is one answer read ahead: the object's JSON or the error.
type fetched struct {
	data []byte
	err  error
}

// DeadlineError: the whole read took longer than its deadline.
type DeadlineError struct {
	Host     string
	Deadline time.Duration
	Err      error
}

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("reading the pod from the cluster at %s took longer than the deadline of %s for the whole read: %v", e.Host, e.Deadline, e.Err)
}

func (e *DeadlineError) Unwrap() error { return e.Err }

// notAnswered classes an error that is not an API refusal: a redirect or
// an answer that is not an object (said as what they are), the read's
// deadline, or the cluster not reached.
func (r *reader) notAnswered(ctx context.Context, err error) error {
	var re *RedirectError
	var ae *AnswerError
	switch {
	case errors.As(err, &re), errors.As(err, &ae):
		return err
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &DeadlineError{Host: r.host, Deadline: r.deadline, Err: err}
	}
	return &UnreachableError{Host: r.host, Err: err}
}

// fetchWorkers bounds the GETs in flight at once.
const fetchWorkers = 16

// objRef names one object to read.
type objRef struct {
	kind, group, version, resource, ns, name string
}

func (o objRef) key() string { return o.kind + "/" + o.ns + "/" + o.name }

// prefetch GETs refs, fetchWorkers at a time, for get to take in order.
func (r *reader) prefetch(ctx context.Context, refs []objRef) {
	type result struct {
		key string
		f   fetched
	}
	todo := map[string]objRef{}
	for _, ref := range refs {
		if _, ok := r.fetched[ref.key()]; !ok && !r.seen[ref.key()] {
			todo[ref.key()] = ref
		}
	}
	jobs := make(chan objRef)
	results := make(chan result)
	var wg sync.WaitGroup
	for i := 0; i < fetchWorkers && i < len(todo); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ref := range jobs {
				data, err := r.c.fetch(ctx, path(ref.group, ref.version, ref.resource, ref.ns, ref.name))
				results <- result{ref.key(), fetched{data, err}}
			}
		}()
	}
	go func() {
		for _, ref := range todo {
			jobs <- ref
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	for res := range results {
		r.fetched[res.key] = res.f
	}
}

// peek decodes an answer read ahead, without keeping it; false when there
// is none or it is not the object.
func (r *reader) peek(key string, obj any) bool {
	f, ok := r.fetched[key]
	return ok && f.err == nil && json.Unmarshal(f.data, obj) == nil
}

func (r *reader) keep(kind, ns, name string, obj any) {
	clean(obj)
	r.out.Objects = append(r.out.Objects, obj)
	r.seen[kind+"/"+ns+"/"+name] = true
}

// get reads one object (once) into obj: ok false when it is missing,
// recorded with by; an error only when the API server cannot be reached.
func (r *reader) get(ctx context.Context, kind, group, version, resource, ns, name, by string, obj any) (bool, error) {
	key := kind + "/" + ns + "/" + name
	if r.seen[key] {
		return false, nil
	}
	p := path(group, version, resource, ns, name)
	var err error
	if f, ok := r.fetched[key]; ok {
		delete(r.fetched, key)
		err = f.err
		if err == nil {
			err = r.c.decode(p, f.data, obj)
		}
	} else {
		err = r.c.get(ctx, p, obj)
	}
	if err != nil {
		if !isAPIError(err) {
			return false, r.notAnswered(ctx, err)
		}
		r.seen[key] = true
		if by != "" {
			r.out.Missing = append(r.out.Missing, Missing{Object: kind + " " + join(ns, name), By: by, Reason: apiMessage(err)})
		}
		return false, nil
	}
	r.keep(kind, ns, name, obj)
	return true, nil
}

// path is an object's URL path.
func path(group, version, resource, ns, name string) string {
	p := "/api/" + version
	if group != "" {
		p = "/apis/" + group + "/" + version
	}
	if ns != "" {
		p += "/namespaces/" + url.PathEscape(ns)
	}
	return p + "/" + resource + "/" + url.PathEscape(name)
}

func join(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func (r *reader) podObjects(ctx context.Context, pod *corev1.Pod, nodeName string) error {
	podName := "Pod " + pod.Namespace + "/" + pod.Name
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	if _, err := r.get(ctx, "ServiceAccount", "", "v1", "serviceaccounts", pod.Namespace, sa, podName+" spec.serviceAccountName", &corev1.ServiceAccount{}); err != nil {
		return err
	}
	if nodeName != "" {
		// The node's labels and UID, when the cluster has it; else the
		// simulator's own Node, as for manifests without one (by "").
		if _, err := r.get(ctx, "Node", "", "v1", "nodes", "", nodeName, "", &corev1.Node{}); err != nil {
			return err
		}
	}
	r.prefetchVolumes(ctx, pod, nodeName)
	for i, v := range pod.Spec.Volumes {
		by := fmt.Sprintf("%s spec.volumes[%d]", podName, i)
		var err error
		switch {
		case v.CSI != nil:
			err = r.inline(ctx, pod.Namespace, v.CSI, by)
		case v.PersistentVolumeClaim != nil:
			err = r.claim(ctx, pod.Namespace, v.PersistentVolumeClaim.ClaimName, nodeName, by+".persistentVolumeClaim")
		case v.Ephemeral != nil:
			// The ephemeral volume controller's claim: <pod>-<volume>.
			err = r.claim(ctx, pod.Namespace, pod.Name+"-"+v.Name, nodeName, by+".ephemeral")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// prefetchVolumes reads ahead what is one GET per volume: the pod's
// claims, then their PVs, then the PVs' VolumeAttachments on the node.
func (r *reader) prefetchVolumes(ctx context.Context, pod *corev1.Pod, nodeName string) {
	var claims []objRef
	for _, v := range pod.Spec.Volumes {
		if name := ClaimName(pod, v); name != "" {
			claims = append(claims, objRef{"PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", pod.Namespace, name})
		}
	}
	if len(claims) < 2 {
		return
	}
	r.prefetch(ctx, claims)
	var pvs []objRef
	for _, ref := range claims {
		pvc := &corev1.PersistentVolumeClaim{}
		if r.peek(ref.key(), pvc) && pvc.Spec.VolumeName != "" {
			pvs = append(pvs, objRef{"PersistentVolume", "", "v1", "persistentvolumes", "", pvc.Spec.VolumeName})
		}
	}
	r.prefetch(ctx, pvs)
	if nodeName == "" {
		return
	}
	var vas []objRef
	for _, ref := range pvs {
		pv := &corev1.PersistentVolume{}
		if r.peek(ref.key(), pv) && pv.Spec.CSI != nil {
			vas = append(vas, objRef{"VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", "", node.AttachmentName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, nodeName)})
		}
	}
	r.prefetch(ctx, vas)
}

func (r *reader) inline(ctx context.Context, ns string, v *corev1.CSIVolumeSource, by string) error {
	if err := r.driver(ctx, v.Driver); err != nil {
		return err
	}
	if ref := v.NodePublishSecretRef; ref != nil && ref.Name != "" {
		_, err := r.get(ctx, "Secret", "", "v1", "secrets", ns, ref.Name, by+".csi.nodePublishSecretRef", &corev1.Secret{})
		return err
	}
	return nil
}

// driver reads a CSIDriver; none is no error (a kubelet then takes the
// driver's defaults, and says so in the run).
func (r *reader) driver(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	_, err := r.get(ctx, "CSIDriver", "storage.k8s.io", "v1", "csidrivers", "", name, "", &storagev1.CSIDriver{})
	return err
}

func (r *reader) claim(ctx context.Context, ns, name, nodeName, by string) error {
	pvc := &corev1.PersistentVolumeClaim{}
	ok, err := r.get(ctx, "PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", ns, name, by, pvc)
	if err != nil || !ok {
		return err
	}
	claimName := "PersistentVolumeClaim " + ns + "/" + name
	if c := pvc.Spec.StorageClassName; c != nil && *c != "" {
		if err := r.class(ctx, *c, pvc, claimName+" spec.storageClassName"); err != nil {
			return err
		}
	}
	if pvc.Spec.VolumeName == "" {
		return nil
	}
	pv := &corev1.PersistentVolume{}
	ok, err = r.get(ctx, "PersistentVolume", "", "v1", "persistentvolumes", "", pvc.Spec.VolumeName, claimName+" spec.volumeName", pv)
	if err != nil || !ok {
		return err
	}
	return r.volume(ctx, pv, nodeName)
}

// volume reads what a CSI PV names: its driver, its Secrets, its class and
// its VolumeAttachment on the node.
func (r *reader) volume(ctx context.Context, pv *corev1.PersistentVolume, nodeName string) error {
	if pv.Spec.StorageClassName != "" {
		if err := r.class(ctx, pv.Spec.StorageClassName, nil, "PersistentVolume "+pv.Name+" spec.storageClassName"); err != nil {
			return err
		}
	}
	c := pv.Spec.CSI
	if c == nil {
		return nil
	}
	if err := r.driver(ctx, c.Driver); err != nil {
		return err
	}
	by := "PersistentVolume " + pv.Name + " spec.csi."
	for _, s := range []struct {
		field string
		ref   *corev1.SecretReference
	}{
		{"nodeStageSecretRef", c.NodeStageSecretRef}, {"nodePublishSecretRef", c.NodePublishSecretRef},
		{"nodeExpandSecretRef", c.NodeExpandSecretRef}, {"controllerPublishSecretRef", c.ControllerPublishSecretRef},
		{"controllerExpandSecretRef", c.ControllerExpandSecretRef},
	} {
		if s.ref == nil || s.ref.Name == "" {
			continue
		}
		if _, err := r.get(ctx, "Secret", "", "v1", "secrets", s.ref.Namespace, s.ref.Name, by+s.field, &corev1.Secret{}); err != nil {
			return err
		}
	}
	if nodeName == "" {
		return nil
	}
	// The attach/detach controller's object, named as the kubelet looks
	// it up; a driver that does not attach has none (no error).
	va := node.AttachmentName(c.VolumeHandle, c.Driver, nodeName)
	_, err := r.get(ctx, "VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", "", va, "", &storagev1.VolumeAttachment{})
	return err
}

// class reads a StorageClass, and the Secrets its parameters name (the
// provisioner's templates ${pvc.name}, ${pvc.namespace} and ${pv.name}
// filled in; other templates are left unread).
func (r *reader) class(ctx context.Context, name string, pvc *corev1.PersistentVolumeClaim, by string) error {
	sc := &storagev1.StorageClass{}
	ok, err := r.get(ctx, "StorageClass", "storage.k8s.io", "v1", "storageclasses", "", name, by, sc)
	if err != nil || !ok {
		return err
	}
	// The provisioner's CSIDriver: what the kubelet reads for the volumes
	// of the class (attach, pod info), a claim's PV not made yet.
	if err := r.driver(ctx, sc.Provisioner); err != nil {
		return err
	}
	if pvc == nil {
		return nil
	}
	for _, ref := range classSecrets(sc, pvc) {
		if _, err := r.get(ctx, "Secret", "", "v1", "secrets", ref[0], ref[1], "StorageClass "+name+" parameters", &corev1.Secret{}); err != nil {
			return err
		}
	}
	return nil
}

// classSecrets are the namespace/name pairs of a class's secret
// parameters for a claim.
func classSecrets(sc *storagev1.StorageClass, pvc *corev1.PersistentVolumeClaim) [][2]string {
	const prefix = "csi.storage.k8s.io/"
	fill := strings.NewReplacer("${pvc.name}", pvc.Name, "${pvc.namespace}", pvc.Namespace, "${pv.name}", pvc.Spec.VolumeName)
	var out [][2]string
	for k, name := range sc.Parameters {
		kind, ok := strings.CutSuffix(strings.TrimPrefix(k, prefix), "-secret-name")
		if !ok || !strings.HasPrefix(k, prefix) {
			continue
		}
		ns := sc.Parameters[prefix+kind+"-secret-namespace"]
		ns, name = fill.Replace(ns), fill.Replace(name)
		if ns == "" || name == "" || strings.Contains(ns+name, "${") {
			continue
		}
		out = append(out, [2]string{ns, name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0]+"/"+out[i][1] < out[j][0]+"/"+out[j][1] })
	return out
}

// clean drops what the API server keeps for itself (managed fields); the
// UIDs, names and defaults stay.
func clean(obj any) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
}

// isAPIError: the API server answered (with a refusal), as opposed to not
// answering at all.
func isAPIError(err error) bool {
	var se *cluster.StatusError
	return errors.As(err, &se)
}

// apiMessage is the API server's message of a refusal.
func apiMessage(err error) string {
	var se *cluster.StatusError
	if errors.As(err, &se) {
		return se.Error()
	}
	return err.Error()
}

// ClaimName is the claim a pod volume uses: its claim's name, or for a
// generic ephemeral volume the claim the ephemeral controller makes
// (<pod>-<volume>); "" for a volume without a claim.
func ClaimName(pod *corev1.Pod, v corev1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		return pod.Name + "-" + v.Name
	}
	return ""
}
