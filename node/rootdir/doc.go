// Package rootdir is the kubelet's root dir as the simulator keeps it safe:
// its layout (paths.go, the kubelet's getters in pkg/kubelet/kubelet_getters.go
// and the CSI plugin's names in pkg/volume/csi/csi_plugin.go, csi_attacher.go,
// csi_block.go), the walk from the root's descriptor with no symlink and no
// mount crossed and its refusals (openat.go), the file system under it made
// through that walk (fsat.go, fs.go, ownfile.go: where the
// kubelet calls os.MkdirAll, os.Remove and mount-utils, as
// pkg/volume/util/hostutil and pkg/volume/util/subpath guard them), the
// volume data files and mount dirs of the CSI plugin (fsvolume.go, after
// pkg/volume/csi/csi_util.go and csi_mounter.go's removeMountDir), the block
// volume's loop device (blockdev.go, pkg/volume/util/volumepathhandler),
// and what no kubelet has because it owns its node: the root dir's lock
// (rootlock.go), the journal of what a run made (journal.go), its checks on
// reading (journalcheck.go), and the refusal of an earlier run's root dir
// (earlierrun.go).
//
// It is node's lowest layer: it imports no sibling package.
package rootdir
