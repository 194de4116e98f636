package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Remove deletes objects made for one pod's life (a conformance
// scenario's PersistentVolume and claim) once the pod is gone, and drops
// their finalizers as the pv- and pvc-protection controllers of
// kube-controller-manager (which does not run here) would once nothing
// uses them: the next scenario creates them again under the same names.
func (cp *ControlPlane) Remove(ctx context.Context, objs []Object) []error {
	var errs []error
	for i := len(objs) - 1; i >= 0; i-- { // the claim before its volume
		o := objs[i]
		res, err := (&mapper{c: cp.admin}).resource(ctx, o.APIVersion(), o.Kind())
		if err != nil {
			errs = append(errs, fmt.Errorf("API server: delete %s: %w", o, err))
			continue
		}
		path := res.collection(o.Namespace()) + "/" + url.PathEscape(o.Name())
		zero := int64(0)
		if err := cp.admin.do(ctx, http.MethodDelete, path, &metav1.DeleteOptions{GracePeriodSeconds: &zero}, nil); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("API server: delete %s: %w", o, err))
			continue
		}
		patch := map[string]any{"metadata": map[string]any{"finalizers": nil}}
		if err := cp.admin.do(ctx, http.MethodPatch, path, patch, nil, "application/merge-patch+json"); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("API server: finalizers of %s: %w", o, err))
		}
	}
	return errs
}
