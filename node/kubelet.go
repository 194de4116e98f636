// Package node is the simulated kubelet: what a kubelet on a node does for
// the CSI volumes of a pod, call for call. Its files follow the kubelet's
// own split: registration (pluginmanager, csi_plugin.go RegisterPlugin),
// stage.go (csi_attacher.go MountDevice/UnmountDevice), publish.go
// (csi_mounter.go SetUpAt/TearDownAt), attach.go (WaitForAttach and
// publish_context), lifecycle.go (the operation generator and reconciler
// order), with the facts of ../shared/KUBELET.md in named helpers.
package node

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/cluster"
)

// DefaultTimeout is csiTimeout in csi_plugin.go: one context per operation.
const DefaultTimeout = 2 * time.Minute

// Config is what a kubelet is started with.
type Config struct {
	RootDir  string
	NodeName string
	Timeout  time.Duration
	Version  Version
	// Gates are the release's feature gates with the user's overrides;
	// nil: the release's defaults.
	Gates *FeatureGates
	// SELinux is the node's SELinux.
	SELinux SELinux
	// Retry bounds the kubelet's retries of failed operations.
	Retry Retry
	// DryRun: nothing is really mounted (`plan`), so the kubelet's own
	// work on the mounted volume (fsGroup, mount checks) is only described.
	DryRun bool
}

// Kubelet is one simulated kubelet on one node, talking to one driver.
type Kubelet struct {
	cfg     Config
	paths   Paths
	cluster *cluster.Cluster
	conn    grpc.ClientConnInterface
	trace   *csiclient.Trace
	tokens  TokenIssuer
	fs      *fileSystem

	registered map[string]*Registration
	devices    map[string]*deviceState
	mounts     map[mountKey]*mountState
	podDirs    map[string]bool // pods whose directories this run made
	gates      *FeatureGates
	selinux    SELinux
	// seLinuxVolumes is the desired state's label per volume.
	seLinuxVolumes map[string]*seLinuxVolume
	// lastTokens is the tokens value last sent per pod volume.
	lastTokens map[string]string
}

// New returns a kubelet. conn is the driver connection (a csiclient.Dialer
// for `run`, a csiclient.Planned for `plan`); every call through it is
// recorded into trace.
func New(cfg Config, c *cluster.Cluster, conn grpc.ClientConnInterface, trace *csiclient.Trace) *Kubelet {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Version.Minor == 0 {
		cfg.Version = DefaultVersion
	}
	if cfg.Gates == nil {
		cfg.Gates, _ = NewFeatureGates(cfg.Version, "")
	}
	return &Kubelet{
		cfg:        cfg,
		paths:      Paths{Root: cfg.RootDir},
		cluster:    c,
		conn:       &csiclient.Recorder{Next: conn, Trace: trace},
		trace:      trace,
		fs:         newFileSystem(),
		registered: map[string]*Registration{},
		devices:    map[string]*deviceState{},
		mounts:     map[mountKey]*mountState{},
		podDirs:    map[string]bool{},
		gates:      cfg.Gates,
		selinux:    cfg.SELinux,

		seLinuxVolumes: map[string]*seLinuxVolume{},
		lastTokens:     map[string]string{},
	}
}

// SetTokenIssuer sets what answers the kubelet's TokenRequests.
func (k *Kubelet) SetTokenIssuer(t TokenIssuer) { k.tokens = t }

// Paths returns the kubelet's directory layout.
func (k *Kubelet) Paths() Paths { return k.paths }

func (k *Kubelet) nodeClient() csi.NodeClient { return csi.NewNodeClient(k.conn) }

func (k *Kubelet) identityClient() csi.IdentityClient { return csi.NewIdentityClient(k.conn) }

// operationContext is createCSIOperationContext: one timeout shared by all
// the calls of one kubelet operation.
func (k *Kubelet) operationContext(ctx context.Context, l csiclient.Labels) (context.Context, context.CancelFunc) {
	return context.WithTimeout(csiclient.WithLabels(ctx, l), k.cfg.Timeout)
}
