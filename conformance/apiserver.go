package conformance

import (
	"context"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// APIServer is a real API server around the scenarios, one for the whole
// run (its start-up takes seconds): what `run --apiserver` does for its
// input, done for each scenario's objects.
type APIServer interface {
	// Tokens answers every scenario's TokenRequests (the TokenRequest
	// API, with the kubelet's credential).
	Tokens() tokens.TokenGetter
	// Plan creates the objects of the plan's pods in c (the pods, their
	// PersistentVolume and claim) through the API, puts the server's
	// versions in c and in the plan (server-set UIDs), and hooks the API
	// writes of the kubelet and the controllers into the plan: the pods
	// and their volume are deleted, and what the driver made for the pods
	// garbage-collected, after the teardown. The driver's API requests go
	// to trace, a summary of them to note.
	Plan(ctx context.Context, c *manifests.Cluster, plan *node.Plan, trace *csiclient.Trace, note func(format string, a ...any)) error
}

// tokenOptions are the token path of `run` over the scenario's own
// objects (its ServiceAccounts and Nodes), with the run's one signing key,
// or the API server's TokenRequest API.
func (env *runEnv) tokenOptions() *node.TokenOptions {
	opts := &node.TokenOptions{NodeName: env.cfg.NodeName, Key: env.tokenKey}
	if env.cfg.APIServer != nil {
		opts.API = env.cfg.APIServer.Tokens()
	}
	return opts
}
