// Package node is the simulated kubelet: what a kubelet on a node does for
// the CSI volumes of its pods, call for call. It is the kubelet's volume
// manager and pod workers over the packages below it, whose imports only go
// down:
//
//	node                       the Kubelet: New, Run, Plan, Outcome, Recover (this package)
//	node/volumemanager/cache   the actual state of the world
//	node/operationexecutor     one operation per volume and pod, backoff, retries
//	node/csi                   the CSI volume plugin: registration, attacher, mounter,
//	                           block mapper, requests, pod info, tokens, SELinux, fsGroup
//	node/rootdir               the root dir: layout, safe file system, lock, journal
//	node/release               the release: version, rules, feature gates
//
// run.go is a pod's whole life (register, attach, mount, run, tear down,
// clean up) that run, plan, load and conformance drive with their own
// plans; cleanup goes through recover.go's Recover, which ends with the
// same teardown (teardown.go). The other files follow the kubelet's own
// split: pluginmanager.go (pkg/kubelet/pluginmanager and the operation
// executor's RegisterPlugin), lifecycle.go and mapvolume.go (the operation
// generator, pkg/volume/util/operationexecutor/operation_generator.go:
// MountVolume, MapVolume, UnmountVolume, UnmountDevice), selinuxlabel.go
// (the desired state's SELinux label), expand.go and expandinuse.go
// (NodeExpandVolume at mount and in use), republish.go and remountretry.go
// (the reconciler's remounts), running.go and stats.go (pod syncs and
// stats while pods run), cleanup.go (the orphaned pod dirs' cleanup and
// what a run leaves), recover.go (the reconciler's reconstruction after a
// restart, pkg/kubelet/volumemanager/reconciler/reconstruct.go), with the
// facts of docs/kubelet.md in named helpers. exports.go is the front door
// for the CLI and the engine: the names they use from the packages below.
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
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager/cache"
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
	*volumeManager
	cfg Config
}

// volumeManager is the kubelet's volume manager (volume_manager.go): the
// actual state of the world and the operations over the CSI plugin, with
// the bounds the kubelet's Config sets on them.
type volumeManager struct {
	*csiplugin.Plugin
	state    *cache.ActualState
	ops      *operationexecutor.Operations
	attacher *csiplugin.Attacher
	mounter  *csiplugin.Mounter
	mapper   *csiplugin.BlockMapper
	// started is when the kubelet started: its stats analyzer ticks
	// from then (running.go).
	started time.Time
	// timeout is the one context of each operation (csiTimeout), retry
	// the bounds of the retries of failed operations, force `cleanup
	// --force` (Config).
	timeout time.Duration
	retry   operationexecutor.Retry
	force   bool
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
		volumeManager: &volumeManager{
			Plugin:   p,
			state:    cache.NewActualState(),
			ops:      &operationexecutor.Operations{},
			attacher: &csiplugin.Attacher{Plugin: p},
			mounter:  &csiplugin.Mounter{Plugin: p},
			mapper:   &csiplugin.BlockMapper{Plugin: p},
			started:  time.Now(),
			timeout:  cfg.Timeout,
			retry:    cfg.Retry,
			force:    cfg.Force,
		},
		cfg: cfg,
	}
	if k.Tokens == nil && cfg.TokenOptions != nil {
		o := *cfg.TokenOptions
		if o.NodeName == "" {
			o.NodeName = cfg.NodeName
		}
		k.Tokens = csiplugin.NewTokenSource(cfg.Release, cfg.Cluster, o)
	}
	k.FS.Command = cfg.Command
	k.FS.Lock = cfg.RootLock
	for _, d := range cfg.Adopted {
		k.FS.RememberKind(d, rootdir.RecordDir)
	}
	return k
}

// Paths returns the kubelet's directory layout.
func (k *Kubelet) Paths() rootdir.Paths { return k.Layout }
