package csi

// plugin.go follows pkg/volume/csi/csi_plugin.go: the plugin and its volume host.

import (
	"context"
	"fmt"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
)

// Plugin is the kubelet's CSI volume plugin (csi_plugin.go) with its
// volume host: what the attacher, the mounter and the block mapper share
// and nothing of the volume manager's (the actual state of the world, the
// operations): the release, the node's paths and file system, the
// cluster's objects, the driver connection and the trace, the token
// getter, the node's SELinux, and the registered drivers.
type Plugin struct {
	// NodeName is the node's name (the volume host's GetNodeName);
	// dryRun: nothing is really mounted (Config.DryRun).
	NodeName string
	DryRun   bool
	Release  release.Release
	Layout   rootdir.Paths
	Cluster  *manifests.Cluster
	Conn     grpc.ClientConnInterface
	// NodeClient and identityClient call the driver through conn.
	NodeClient     csi.NodeClient
	IdentityClient csi.IdentityClient
	Trace          *csiclient.Trace
	Tokens         TokenIssuer
	FS             *rootdir.FileSystem
	SELinux        SELinux
	Drivers        *Drivers
	// SentTokens are the tokens last sent per pod volume, to tell a
	// republish that renews them.
	SentTokens *TokenRecord
}

// TokenRecord holds the tokens value last sent for each pod volume.
type TokenRecord struct {
	mu   sync.Mutex
	Last map[string]string
}

// swap stores the tokens value last sent for a pod volume and returns the
// previous one.
func (t *TokenRecord) swap(key, value string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, seen := t.Last[key]
	t.Last[key] = value
	return prev, seen
}

// Attacher is csi_attacher.go's attacher as the kubelet's
// MountDevice and UnmountDevice use it: NodeStageVolume and
// NodeUnstageVolume at the device mount path (stage.go).
type Attacher struct{ *Plugin }

// Mounter is csi_mounter.go's mounter: SetUp and TearDown, that is
// NodePublishVolume and NodeUnpublishVolume at the pod's target path
// (publish.go).
type Mounter struct{ *Plugin }

// BlockMapper is csi_block.go's mapper of block volumes: SetUpDevice
// (NodeStageVolume), MapPodDevice (NodePublishVolume), their teardown,
// and the kubelet's device links (block.go).
type BlockMapper struct{ *Plugin }

// TokenIssuer answers the kubelet's TokenRequests: the API server's
// TokenRequest endpoint behind the kubelet's token manager.
type TokenIssuer interface {
	Token(ctx context.Context, namespace, serviceAccount string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// driverClient is csiClientGetter.Get / newCsiDriverClient: a volume can
// only be mounted through a driver registered under the exact name the
// volume names.
func (k *Plugin) DriverRegistered(driver string) error {
	if _, ok := k.Drivers.registration(driver); !ok {
		// The kubelet's words, then the simulator's hint for a typo.
		return fmt.Errorf("driver name %s not found in the list of registered CSI drivers%s", driver, manifests.DidYouMean(driver, k.Drivers.names()))
	}
	return nil
}

// PluginSupportsSELinuxMount is csiPlugin.SupportsSELinuxContextMount: the
// CSIDriver's seLinuxMount.
func (k *Plugin) PluginSupportsSELinuxMount(driver string) bool {
	if !k.Release.Enabled(release.SELinuxMountReadWriteOncePod) {
		return false
	}
	d, ok := k.Cluster.CSIDriver(driver)
	return ok && d.Spec.SELinuxMount != nil && *d.Spec.SELinuxMount
}
