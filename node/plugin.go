package node

import (
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/release"

	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
)

// csiPlugin is the kubelet's CSI volume plugin (csi_plugin.go) with its
// volume host: what the attacher, the mounter and the block mapper share
// and nothing of the volume manager's (the actual state of the world, the
// operations): the release, the node's paths and file system, the
// cluster's objects, the driver connection and the trace, the token
// getter, the node's SELinux, and the registered drivers.
type csiPlugin struct {
	cfg     Config
	release release.Release
	paths   rootdir.Paths
	cluster *manifests.Cluster
	conn    grpc.ClientConnInterface
	// nodeClient and identityClient call the driver through conn.
	nodeClient     csi.NodeClient
	identityClient csi.IdentityClient
	trace          *csiclient.Trace
	tokens         TokenIssuer
	fs             *rootdir.FileSystem
	selinux        SELinux
	drivers        *csiDrivers
	// sentTokens are the tokens last sent per pod volume, to tell a
	// republish that renews them.
	sentTokens *tokenRecord
}

// tokenRecord holds the tokens value last sent for each pod volume.
type tokenRecord struct {
	mu   sync.Mutex
	last map[string]string
}

// swap stores the tokens value last sent for a pod volume and returns the
// previous one.
func (t *tokenRecord) swap(key, value string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, seen := t.last[key]
	t.last[key] = value
	return prev, seen
}

// csiAttacher is csi_attacher.go's attacher as the kubelet's
// MountDevice and UnmountDevice use it: NodeStageVolume and
// NodeUnstageVolume at the device mount path (stage.go).
type csiAttacher struct{ *csiPlugin }

// csiMountMgr is csi_mounter.go's mounter: SetUp and TearDown, that is
// NodePublishVolume and NodeUnpublishVolume at the pod's target path
// (publish.go).
type csiMountMgr struct{ *csiPlugin }

// csiBlockMapper is csi_block.go's mapper of block volumes: SetUpDevice
// (NodeStageVolume), MapPodDevice (NodePublishVolume), their teardown,
// and the kubelet's device links (block.go).
type csiBlockMapper struct{ *csiPlugin }
