// Package node is the simulated kubelet: what a kubelet on a node does for
// the CSI volumes of its pods, call for call. It is the Kubelet that the
// CLI and the engine start (New, Config) and drive (Run with a Plan,
// Recover), over the packages below it, whose imports only go down:
//
//	node                       the Kubelet: New, Run, Plan, Outcome, Recover, exports.go
//	node/volumemanager         the volume manager: the operations on a pod's volumes,
//	                           registration, expansion, republish, syncs, stats, cleanup
//	node/volumemanager/cache   the actual state of the world
//	node/operationexecutor     one operation per volume and pod, backoff, retries
//	node/csi                   the CSI volume plugin: registration, attacher, mounter,
//	                           block mapper, requests, pod info, tokens, SELinux, fsGroup
//	node/rootdir               the root dir: layout, safe file system, lock, journal
//	node/release               the release: version, rules, feature gates
//
// kubelet.go holds Config and New (cmd/kubelet/app/server.go's
// RunKubelet, pkg/kubelet/kubelet.go NewMainKubelet); run.go is a pod's
// whole life (register, attach, mount, run, tear down, clean up) that run,
// plan, load and conformance drive with their own plans (the pod workers,
// pkg/kubelet/pod_workers.go); runningpod.go the pod while it runs;
// controller.go the attach/detach controller's side; recover.go the
// volume reconstruction after a restart
// (pkg/kubelet/volumemanager/reconciler/reconstruct.go) that `cleanup`
// runs, ending with the same teardown (teardown.go). exports.go is the
// front door for the CLI and the engine: the names they use from the
// packages below.
package node

import (
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// DefaultTimeout is csiTimeout in csi_plugin.go: one context per operation.
const DefaultTimeout = 2 * time.Minute

// Config is what a kubelet is started with: everything it needs, given
// once to New.
type Config struct {
	// Cluster holds the API server's objects the kubelet reads.
	Cluster *manifests.Cluster
	// Conn is the driver connection (a csiclient.Dialer for `run`, a
	// csiclient.Planned for `plan`); every call through it is recorded
	// into Trace.
	Conn  grpc.ClientConnInterface
	Trace *csiclient.Trace
	// Tokens answers the kubelet's TokenRequests. Nil: with TokenOptions,
	// a TokenSource of the Release over the Cluster (its ServiceAccounts
	// and Nodes); without, the kubelet has no token getter.
	Tokens       csiplugin.TokenIssuer
	TokenOptions *csiplugin.TokenOptions
	// Command names the command in the journal.
	Command string
	// Force (`cleanup --force`): a volume whose unpublish or unstage the
	// driver refused (NotFound: it no longer knows the volume) is
	// unmounted and removed by the simulator, the paths its journal
	// recorded only (forceRemove), instead of being kept.
	Force bool
	// Adopted are the root dir and the parents a command made for it: they
	// go when the run (or the `cleanup` of an interrupted run) leaves
	// nothing else in them.
	Adopted []string
	// RootLock is the root dir's lock: released (its file removed) when
	// the run leaves nothing, and kept otherwise. Nil: none.
	RootLock *rootdir.RootLock

	RootDir  string
	NodeName string
	Timeout  time.Duration
	// Release is the kubelet release and its gates; zero: the newest with
	// its defaults.
	Release release.Release
	// SELinux is the node's SELinux.
	SELinux csiplugin.SELinux
	// Retry bounds the kubelet's retries of failed operations.
	Retry operationexecutor.Retry
	// DryRun: nothing is really mounted (`plan`), so the kubelet's own
	// work on the mounted volume (fsGroup, mount checks) is only described.
	DryRun bool
}

// Kubelet is one simulated kubelet on one node, talking to one driver:
// the volume manager (the actual state of the world, the operations) over
// the CSI plugin, whose attacher (MountDevice, UnmountDevice), mounter
// (SetUp, TearDown) and block mapper it drives.
type Kubelet struct {
	vm  *volumemanager.VolumeManager
	cfg Config
}

// New returns the kubelet cfg describes.
func New(cfg Config) *Kubelet {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if !cfg.Release.Valid() {
		cfg.Release = release.DefaultRelease()
	}
	if cfg.Cluster == nil {
		cfg.Cluster = manifests.New()
	}
	if cfg.Trace == nil {
		cfg.Trace = csiclient.NewTrace()
	}
	p := &csiplugin.Plugin{
		NodeName:   cfg.NodeName,
		DryRun:     cfg.DryRun,
		Release:    cfg.Release,
		Layout:     rootdir.Paths{Root: cfg.RootDir},
		Cluster:    cfg.Cluster,
		Conn:       &csiclient.Recorder{Next: cfg.Conn, Trace: cfg.Trace},
		Trace:      cfg.Trace,
		Tokens:     cfg.Tokens,
		FS:         rootdir.NewFileSystem(cfg.RootDir),
		SELinux:    cfg.SELinux,
		Drivers:    &csiplugin.Drivers{Registered: map[string]*csiplugin.Registration{}},
		SentTokens: &csiplugin.TokenRecord{Last: map[string]string{}},
	}
	p.NodeClient, p.IdentityClient = csi.NewNodeClient(p.Conn), csi.NewIdentityClient(p.Conn)
	k := &Kubelet{
		vm:  volumemanager.NewVolumeManager(p, cfg.Timeout, cfg.Retry, cfg.Force),
		cfg: cfg,
	}
	if k.vm.Tokens == nil && cfg.TokenOptions != nil {
		o := *cfg.TokenOptions
		if o.NodeName == "" {
			o.NodeName = cfg.NodeName
		}
		k.vm.Tokens = csiplugin.NewTokenSource(cfg.Release, cfg.Cluster, o)
	}
	k.vm.FS.Command = cfg.Command
	k.vm.FS.Lock = cfg.RootLock
	for _, d := range cfg.Adopted {
		k.vm.FS.RememberKind(d, rootdir.RecordDir)
	}
	return k
}

// Paths returns the kubelet's directory layout.
func (k *Kubelet) Paths() rootdir.Paths { return k.vm.Layout }
