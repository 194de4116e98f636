package session

// The session's side of --apiserver (session/controlplane): the control
// plane's view of the session, and its place in the run.

import (
	"context"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/controlplane"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/rootdirs"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// controlPlaneConfig is the control plane's view of the session. The
// service account key is generated when none was given: the API server
// and the simulator's own issuer sign with one key.
func (o *CommonOptions) controlPlaneConfig(ep csiclient.Endpoint) (controlplane.Config, error) {
	if o.key == nil {
		key, err := tokens.GenerateKey("rsa")
		if err != nil {
			return controlplane.Config{}, WithCode(ExitEnvironment, err)
		}
		o.key = key
	}
	return controlplane.Config{
		RootDir: o.RootDir, NodeName: o.NodeName, Release: o.Release,
		Issuer: o.Issuer, APIAudiences: o.APIAudiences, Key: o.key,
		Cluster: o.cluster, Endpoint: ep,
		Waiting:  o.tell().WaitingForDriver,
		Teardown: teardownContext,
	}, nil
}

// startAPIServer starts the control plane around the session and waits
// for the driver; the kubelet's TokenRequests then go to the API server.
func (o *CommonOptions) startAPIServer(ctx context.Context, ep csiclient.Endpoint) error {
	cfg, err := o.controlPlaneConfig(ep)
	if err != nil {
		return err
	}
	if err := o.Apiserver.Start(ctx, cfg); err != nil {
		return err
	}
	o.api = o.Apiserver.KubeletTokens()
	return nil
}

// attachAPIServer tells what the control plane is and hooks it into the
// plan (the kubelet's TokenRequests and the driver's API requests into
// the trace, the API writes into the plan).
func (ss *session) attachAPIServer(ctx context.Context, plan *node.Plan) {
	a := &ss.opts.Apiserver
	if !a.Started() {
		return
	}
	for _, line := range a.Announcements() {
		ss.announce(line)
	}
	a.Attach(ctx, controlplane.Run{Trace: ss.trace, Sidecars: ss.sidecars}, plan)
}

// finishAPIServer stops the control plane and, when the run left nothing,
// removes the root dir the run made.
func (ss *session) finishAPIServer(out *node.Outcome) {
	if ss.opts.Apiserver.Finish(out) {
		rootdirs.Remove(ss.rootDirs)
	}
}

// apiServerSummary hands the observer what the driver asked the API
// server.
func (ss *session) apiServerSummary() {
	if r, ok := ss.opts.Apiserver.DriverRequests(); ok {
		ss.obs.APIServer(r)
	}
}

// cleanupControlPlane removes what an interrupted --apiserver run left
// under root, and tells what it did.
func cleanupControlPlane(ss *session, root string) error {
	done, err := controlplane.RemoveLeftover(root)
	if err != nil {
		return err
	}
	if done != "" {
		ss.announce(done)
	}
	return nil
}
