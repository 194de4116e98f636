package controlplane

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/cluster"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// Options are the flags of the API server mode: a real kube-apiserver on
// etcd (the helper csi-kubelet-sim-apiserver) around the simulated node,
// the input created through its API.
type Options struct {
	Enabled          bool
	DriverKubeconfig string
	DriverWait       time.Duration
	// DriverServiceAccount (NAMESPACE/NAME) is the driver's identity when
	// the input's RBAC binds several.
	DriverServiceAccount string

	cfg      Config
	extras   []cluster.Document // the input's kinds the kubelet does not read
	cp       *cluster.ControlPlane
	applied  *cluster.Applied
	identity cluster.DriverIdentity
	madeKC   bool // the driver's kubeconfig is ours to remove
	tail     *cluster.AuditTail
	stopTail context.CancelFunc
	node     *cluster.NodeSide
	tokens   *kubeletTokenRequests
	// skew says how the API server's release differs from the simulated
	// kubelet's ("" when they are the same minor release).
	skew string
	// leaveOut are kinds of the input not created (conformance builds
	// its own pods and volumes).
	leaveOut map[string]bool
}

// Config is the session the control plane runs around.
type Config struct {
	RootDir  string // locked by the session; the control plane lives under it
	NodeName string
	Release  node.Release // the simulated kubelet's: the API server's skew is judged against it
	// Issuer, APIAudiences and Key are the service account tokens': the
	// API server and the simulator's own issuer sign with one key.
	Issuer       string
	APIAudiences []string
	Key          crypto.Signer
	// Cluster is the input: created through the API, and the API
	// server's versions (server-set UIDs and defaults) put in its place.
	Cluster  *manifests.Cluster
	Endpoint csiclient.Endpoint // the driver's socket, waited for
	// Waiting is told when the driver's socket is not there yet.
	Waiting func(DriverWait)
	// Teardown is the context a command tears down with after ctx ended.
	Teardown func(ctx context.Context) context.Context
}

// DriverWait: the API server is up and the driver's socket is not there
// yet; the driver starts once its kubeconfig exists.
type DriverWait struct {
	APIServer  string // its URL
	Wait       time.Duration
	Endpoint   csiclient.Endpoint
	Kubeconfig string // the driver's
}

// Collect is the loader's hook for the kinds the kubelet does not read.
func (o *Options) Collect(src manifests.Source, kind string, data []byte) {
	obj, err := cluster.ObjectFromJSON(data)
	if err != nil {
		return // the loader read its kind from it: not reached
	}
	o.extras = append(o.extras, cluster.Document{Source: src.String(), Obj: obj})
}

// apiserverError maps the mode's errors to exit codes: the input's
// objects refused are bad input, a missing or failing control plane is
// the environment.
func apiserverError(err error) error {
	var refused *cluster.RefusedError
	var notEst *cluster.NotEstablishedError
	var coded *exitcode.Error
	switch {
	case errors.As(err, &coded):
		return err // its code is said already
	case errors.Is(err, context.Canceled):
		return exitcode.With(exitcode.Interrupted, fmt.Errorf("interrupted while the API server started or took the input; it was stopped and removed"))
	case errors.As(err, &refused) && refused.ServerFailed():
		return exitcode.With(exitcode.Environment, fmt.Errorf("--apiserver: the control plane failed while it took the input: %w", err))
	case errors.As(err, &refused), errors.As(err, &notEst):
		return exitcode.With(exitcode.Usage, err)
	}
	return exitcode.With(exitcode.Environment, fmt.Errorf("--apiserver: %w", err))
}

// Start brings the control plane up under the locked root dir, creates the
// input through it, reads the objects back into the cluster the kubelet
// reads (server-set UIDs and defaults), registers the Node, writes the
// driver's kubeconfig and waits for the driver's socket. On error nothing
// of it is left.
func (o *Options) Start(ctx context.Context, cfg Config) (err error) {
	o.cfg = cfg
	o.cp, err = cluster.Start(ctx, cluster.Config{Root: cfg.RootDir, NodeName: cfg.NodeName, Issuer: cfg.Issuer, APIAudiences: cfg.APIAudiences, SigningKey: cfg.Key})
	if err != nil {
		return apiserverError(err)
	}
	defer func() {
		if err != nil {
			o.Stop()
		}
	}()
	o.skew = cluster.SkewNote(o.cp.Version, cfg.Release.Minor)
	docs, err := o.documents(cfg.Cluster)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if o.applied, err = o.cp.Apply(ctx, docs, cluster.ApplyOptions{NodeName: cfg.NodeName}); err != nil {
		var refused *cluster.RefusedError
		if ctx.Err() == nil && errors.As(err, &refused) && refused.ServerError() && o.cp.ExitedWithin(time.Second) {
			return exitcode.With(exitcode.Environment, fmt.Errorf("--apiserver: the control plane exited while it took the input (log: %s): %w", o.cp.Log, err))
		}
		return apiserverError(err)
	}
	if err := readBack(cfg.Cluster, o.applied.Objects); err != nil {
		return exitcode.With(exitcode.Environment, err)
	}
	n, err := o.cp.RegisterNode(ctx, cfg.NodeName)
	if err != nil {
		return apiserverError(err)
	}
	// The Node's UID is the API server's now: pod-bound tokens carry it.
	if err := cfg.Cluster.Replace(n); err != nil {
		if err := cfg.Cluster.Add(n, manifests.Source{File: "the API server"}); err != nil {
			return exitcode.With(exitcode.Environment, err)
		}
	}
	if err := o.writeKubeconfig(ctx, docs); err != nil {
		return apiserverError(err)
	}
	// The kubelet's TokenRequests are lines of the trace (Attach).
	o.tokens = &kubeletTokenRequests{api: o.cp.KubeletTokens()}
	ep := cfg.Endpoint
	if ep.Check() != nil && cfg.Waiting != nil {
		cfg.Waiting(DriverWait{APIServer: o.cp.URL, Wait: o.DriverWait, Endpoint: ep, Kubeconfig: o.identity.Kubeconfig})
	}
	return o.waitDriver(ctx, ep)
}

// Started tells whether the control plane was started.
func (o *Options) Started() bool { return o.cp != nil }

// KubeletTokens is the API server's TokenRequest API as the kubelet's
// token manager calls it; once attached to a run, each request and answer
// is a line of its trace.
func (o *Options) KubeletTokens() tokens.TokenGetter { return o.tokens }

// documents are every input object in the API's terms.
func (o *Options) documents(c *manifests.Cluster) ([]cluster.Document, error) {
	objs := c.Objects()
	for _, sc := range c.StorageClasses() {
		objs = append(objs, sc)
	}
	for _, w := range c.MutatingWebhookConfigurations() {
		objs = append(objs, w)
	}
	var docs []cluster.Document
	for _, obj := range objs {
		if _, kind := manifests.TypeOf(obj); o.leaveOut[kind] {
			continue
		}
		d, err := document(c, obj)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return append(docs, o.extras...), nil
}

// document makes a Document of a typed object of the input.
func document(c *manifests.Cluster, obj any) (cluster.Document, error) {
	apiVersion, kind := manifests.TypeOf(obj)
	if kind == "" {
		return cluster.Document{}, fmt.Errorf("--apiserver: no API kind for %T", obj)
	}
	o, err := cluster.ObjectFrom(obj, apiVersion, kind)
	if err != nil {
		return cluster.Document{}, err
	}
	src := c.SourceOf(kind, o.Namespace(), o.Name()).String()
	if src == "" {
		src = "the input"
	}
	return cluster.Document{Source: src, Obj: o}, nil
}

// readBack puts the API server's version of each object the kubelet reads
// in place of the input's.
func readBack(c *manifests.Cluster, objs []cluster.Object) error {
	for _, o := range objs {
		typed := newTyped(o.APIVersion(), o.Kind())
		if typed == nil {
			continue
		}
		if err := o.Into(typed); err != nil {
			return fmt.Errorf("%s from the API server: %w", o, err)
		}
		if err := c.Replace(typed); err != nil {
			return fmt.Errorf("%s from the API server: %w", o, err)
		}
	}
	return nil
}

// newTyped is an empty object of a kind the kubelet reads; nil for the
// others (and for the webhook configurations, which only the API server
// uses now).
func newTyped(apiVersion, kind string) any {
	if kind == "MutatingWebhookConfiguration" {
		return nil
	}
	return manifests.NewOf(apiVersion, kind)
}

func (o *Options) writeKubeconfig(ctx context.Context, docs []cluster.Document) error {
	path := o.DriverKubeconfig
	if path == "" {
		path = filepath.Join(o.cp.Dir, "driver.kubeconfig")
	} else if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		o.madeKC = true
	}
	sa, why, err := o.driverServiceAccount(docs)
	if err != nil {
		return err
	}
	id, err := o.cp.WriteDriverKubeconfig(ctx, path, sa, why)
	if err != nil && o.DriverServiceAccount != "" {
		return exitcode.With(exitcode.Usage, fmt.Errorf("--driver-service-account: %w", err))
	}
	if err != nil {
		return err
	}
	o.identity = id
	return nil
}

// driverServiceAccount is the driver's identity: --driver-service-account,
// else the one ServiceAccount the input's RBAC binds, else cluster-admin
// (nil), with why.
func (o *Options) driverServiceAccount(docs []cluster.Document) (*types.NamespacedName, string, error) {
	if o.DriverServiceAccount != "" {
		ns, name, ok := strings.Cut(o.DriverServiceAccount, "/")
		if !ok || ns == "" || name == "" {
			return nil, "", exitcode.With(exitcode.Usage, fmt.Errorf("--driver-service-account %q: want NAMESPACE/NAME", o.DriverServiceAccount))
		}
		return &types.NamespacedName{Namespace: ns, Name: name}, "--driver-service-account", nil
	}
	sa, bound := cluster.DriverServiceAccount(docs)
	switch {
	case sa != nil:
		return sa, "the ServiceAccount the input's RBAC binds", nil
	case len(bound) > 1:
		return nil, fmt.Sprintf("cluster-admin (group system:masters): the input's RBAC binds several ServiceAccounts (%s); --driver-service-account NAMESPACE/NAME picks one", strings.Join(bound, ", ")), nil
	}
	return nil, "cluster-admin (group system:masters): the input binds no ServiceAccount with RBAC", nil
}

// waitDriver waits for the driver's socket: with --apiserver the driver
// can start only once its kubeconfig exists.
func (o *Options) waitDriver(ctx context.Context, ep csiclient.Endpoint) error {
	deadline := time.Now().Add(o.DriverWait)
	for {
		err := ep.Check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return exitcode.With(exitcode.Environment, fmt.Errorf("%w (waited %s after writing the driver's kubeconfig %s)", err, o.DriverWait, o.identity.Kubeconfig))
		}
		select {
		case <-ctx.Done():
			return apiserverError(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends the control plane and removes it (and the kubeconfig the run
// wrote where the user asked). Safe to call more than once, and when it
// was never started.
func (o *Options) Stop() {
	if o.stopTail != nil {
		o.stopTail()
	}
	if o.tail != nil {
		o.tail.Poll()
	}
	o.cp.Stop()
	if o.madeKC {
		_ = os.Remove(o.DriverKubeconfig)
		o.madeKC = false
	}
}
