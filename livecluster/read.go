// Package livecluster reads one pod, and every object its volumes make a
// kubelet read, from a running cluster, read-only: `run --kubeconfig FILE
// --pod NAMESPACE/NAME` replays it against a local driver. Only gets of
// named objects: never a list (of Secrets or anything else), never a
// write.
package livecluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
func Read(ctx context.Context, cfg *rest.Config, namespace, name, nodeName string) (*Pod, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	r := &reader{cs: cs, host: cfg.Host, seen: map[string]bool{}}
	pod, err := cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if isAPIError(err) {
			return nil, &NotReadError{Object: "Pod " + namespace + "/" + name, Err: err}
		}
		return nil, &UnreachableError{Host: cfg.Host, Err: err}
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
	cs   kubernetes.Interface
	host string
	seen map[string]bool
	out  Pod
}

func (r *reader) keep(kind, ns, name string, obj any) {
	clean(obj)
	r.out.Objects = append(r.out.Objects, obj)
	r.seen[kind+"/"+ns+"/"+name] = true
}

// get reads one object (once): ok false when it is missing, recorded with
// by; an error only when the API server cannot be reached.
func get[T any](ctx context.Context, r *reader, kind, ns, name, by string, fn func(context.Context, string, metav1.GetOptions) (T, error)) (T, bool, error) {
	var zero T
	key := kind + "/" + ns + "/" + name
	if r.seen[key] {
		return zero, false, nil
	}
	obj, err := fn(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !isAPIError(err) {
			return zero, false, &UnreachableError{Host: r.host, Err: err}
		}
		r.seen[key] = true
		r.out.Missing = append(r.out.Missing, Missing{Object: kind + " " + join(ns, name), By: by, Reason: apiMessage(err)})
		return zero, false, nil
	}
	r.keep(kind, ns, name, obj)
	return obj, true, nil
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
	if _, _, err := get(ctx, r, "ServiceAccount", pod.Namespace, sa, podName+" spec.serviceAccountName", r.cs.CoreV1().ServiceAccounts(pod.Namespace).Get); err != nil {
		return err
	}
	if nodeName != "" {
		// The node's labels and UID, when the cluster has it; else the
		// simulator's own Node, as for manifests without one.
		n, err := r.cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		switch {
		case err == nil:
			r.keep("Node", "", nodeName, n)
		case !isAPIError(err):
			return &UnreachableError{Host: r.host, Err: err}
		}
	}
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

func (r *reader) inline(ctx context.Context, ns string, v *corev1.CSIVolumeSource, by string) error {
	if err := r.driver(ctx, v.Driver); err != nil {
		return err
	}
	if ref := v.NodePublishSecretRef; ref != nil && ref.Name != "" {
		_, _, err := get(ctx, r, "Secret", ns, ref.Name, by+".csi.nodePublishSecretRef", r.cs.CoreV1().Secrets(ns).Get)
		return err
	}
	return nil
}

// driver reads a CSIDriver; none is no error (a kubelet then takes the
// driver's defaults, and says so in the run).
func (r *reader) driver(ctx context.Context, name string) error {
	if name == "" || r.seen["CSIDriver//"+name] {
		return nil
	}
	d, err := r.cs.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		r.keep("CSIDriver", "", name, d)
	case !isAPIError(err):
		return &UnreachableError{Host: r.host, Err: err}
	default:
		r.seen["CSIDriver//"+name] = true
	}
	return nil
}

func (r *reader) claim(ctx context.Context, ns, name, nodeName, by string) error {
	pvc, ok, err := get(ctx, r, "PersistentVolumeClaim", ns, name, by, r.cs.CoreV1().PersistentVolumeClaims(ns).Get)
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
	pv, ok, err := get(ctx, r, "PersistentVolume", "", pvc.Spec.VolumeName, claimName+" spec.volumeName", r.cs.CoreV1().PersistentVolumes().Get)
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
		if _, _, err := get(ctx, r, "Secret", s.ref.Namespace, s.ref.Name, by+s.field, r.cs.CoreV1().Secrets(s.ref.Namespace).Get); err != nil {
			return err
		}
	}
	if nodeName == "" {
		return nil
	}
	// The attach/detach controller's object, named as the kubelet looks
	// it up; a driver that does not attach has none (no error).
	va := node.AttachmentName(c.VolumeHandle, c.Driver, nodeName)
	got, err := r.cs.StorageV1().VolumeAttachments().Get(ctx, va, metav1.GetOptions{})
	switch {
	case err == nil:
		r.keep("VolumeAttachment", "", va, got)
	case !isAPIError(err):
		return &UnreachableError{Host: r.host, Err: err}
	}
	return nil
}

// class reads a StorageClass, and the Secrets its parameters name (the
// provisioner's templates ${pvc.name}, ${pvc.namespace} and ${pv.name}
// filled in; other templates are left unread).
func (r *reader) class(ctx context.Context, name string, pvc *corev1.PersistentVolumeClaim, by string) error {
	sc, ok, err := get(ctx, r, "StorageClass", "", name, by, r.cs.StorageV1().StorageClasses().Get)
	if err != nil || !ok || pvc == nil {
		return err
	}
	for _, ref := range classSecrets(sc, pvc) {
		if _, _, err := get(ctx, r, "Secret", ref[0], ref[1], "StorageClass "+name+" parameters", r.cs.CoreV1().Secrets(ref[0]).Get); err != nil {
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
	var st apierrors.APIStatus
	return errors.As(err, &st)
}

// apiMessage is the API server's message of a refusal.
func apiMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Message
	}
	return err.Error()
}
