// Package node is the simulated kubelet: what a kubelet on a node does for
// the CSI volumes of its pods, call for call. run.go is a pod's whole life
// (register, attach, mount, run, tear down, clean up) that run, plan, load
// and conformance drive with their own plans; cleanup goes through
// recover.go's Recover, which ends with the same teardown (teardown.go).
// The other files follow the kubelet's own split:
// register.go (pluginmanager, csi_plugin.go RegisterPlugin), stage.go
// (csi_attacher.go MountDevice/UnmountDevice), publish.go (csi_mounter.go
// SetUpAt/TearDownAt), block.go (csi_block.go), attach.go (WaitForAttach and
// publish_context), lifecycle.go (the operation generator), operations.go
// (the operation executor's keys), state.go (the actual state of the
// world), running.go (pod syncs and stats while pods run), recover.go (the
// kubelet's volume reconstruction after a restart), with the facts of
// docs/kubelet.md in named helpers.
package node

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// DefaultTimeout is csiTimeout in csi_plugin.go: one context per operation.
const DefaultTimeout = 2 * time.Minute

// Config is what a kubelet is started with.
type Config struct {
	RootDir  string
	NodeName string
	Timeout  time.Duration
	// Release is the kubelet release and its gates; zero: the newest with
	// its defaults.
	Release Release
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
	release Release
	paths   Paths
	cluster *manifests.Cluster
	conn    grpc.ClientConnInterface
	trace   *csiclient.Trace
	tokens  TokenIssuer
	fs      *fileSystem
	state   *actualState
	ops     *operations
	selinux SELinux
}

// New returns a kubelet. conn is the driver connection (a csiclient.Dialer
// for `run`, a csiclient.Planned for `plan`); every call through it is
// recorded into trace.
func New(cfg Config, c *manifests.Cluster, conn grpc.ClientConnInterface, trace *csiclient.Trace) *Kubelet {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if !cfg.Release.valid() {
		cfg.Release = DefaultRelease()
	}
	return &Kubelet{
		cfg:     cfg,
		release: cfg.Release,
		paths:   Paths{Root: cfg.RootDir},
		cluster: c,
		conn:    &csiclient.Recorder{Next: conn, Trace: trace},
		trace:   trace,
		fs:      newFileSystem(cfg.RootDir),
		state:   newActualState(),
		ops:     &operations{},
		selinux: cfg.SELinux,
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
