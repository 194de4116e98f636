package session

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/controlplane"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/rootdirs"
)

// undoStack is what a command undoes at its end, last first.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u *undoStack) Run() {
	for i := len(*u) - 1; i >= 0; i-- {
		(*u)[i]()
	}
	*u = nil
}

// takeRootDir takes (and locks) the root dir; undo releases it and removes
// what it made.
func takeRootDir(co *CommonOptions, created *[]string, undo *undoStack) error {
	c, err := co.prepareRootDir()
	if err != nil {
		return err
	}
	*created = c
	undo.push(func() {
		co.rootLock.Release()
		rootdirs.Remove(c)
	})
	return nil
}

// startWithAPIServer takes the root dir and starts the control plane in
// it, both before the probe: the driver starts once its kubeconfig
// exists. undo stops and removes the control plane, then the root dir.
func (o *ConformanceOptions) startWithAPIServer(ctx context.Context, co *CommonOptions, created *[]string, undo *undoStack) (*controlplane.Scenarios, error) {
	if err := takeRootDir(co, created, undo); err != nil {
		return nil, err
	}
	api, err := o.startConformanceAPI(ctx, co)
	if err != nil {
		return nil, err
	}
	undo.push(o.Apiserver.Close)
	return api, nil
}

// startConformanceAPI starts the control plane under the locked root dir
// with the input (controlplane.Options.StartScenarios).
func (o *ConformanceOptions) startConformanceAPI(ctx context.Context, co *CommonOptions) (*controlplane.Scenarios, error) {
	if o.cluster == nil {
		o.cluster = manifests.New()
	}
	co.NodeName, co.cluster = o.NodeName, o.cluster
	cfg, err := co.controlPlaneConfig(o.endpoint)
	if err != nil {
		return nil, err
	}
	api, err := o.Apiserver.StartScenarios(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// The scenarios use the API server's CSIDriver (its defaults, its UID).
	o.csiDrivers = o.cluster.CSIDrivers()
	return api, nil
}

// hook adds to cfg the API server (announced after the header) or the
// admission of the input's webhooks, and the live trace of -v.
func (o *ConformanceOptions) hook(ctx context.Context, cfg *conformance.Config, api *controlplane.Scenarios, p ConformanceObserver, undo *undoStack) error {
	s := o.Streams
	if api != nil {
		for _, line := range api.Announcements() {
			p.Announce(line)
		}
		// The API server runs the input's webhooks on the pods itself.
		cfg.APIServer = api
	} else {
		admit, err := o.startAdmission(ctx, s, undo)
		if err != nil {
			return err
		}
		cfg.Admit = admit
	}
	// The live trace (-v) is the observer's; without one the scenarios
	// may run side by side.
	cfg.Sink = p.LiveTrace()
	return nil
}

// startAdmission starts admitFunc's admission; undo closes it.
func (o *ConformanceOptions) startAdmission(ctx context.Context, s Streams, undo *undoStack) (func(*corev1.Pod) (*corev1.Pod, error), error) {
	admit, closeAdmit, err := o.Admission.Pods(ctx, o.cluster, o.Release.APIServerDefaults(), s.Err)
	if err != nil {
		return nil, err
	}
	undo.push(closeAdmit)
	return admit, nil
}
