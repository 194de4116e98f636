// Package csi is the kubelet's CSI volume plugin, pkg/volume/csi, over the
// root dir's safe file system (node/rootdir) and the release's rules
// (node/release): the plugin and its volume host (plugin.go, csi_plugin.go),
// registration (register.go, csi_plugin.go RegisterPlugin and
// nodeinfomanager), the attacher's MountDevice and UnmountDevice
// (stage.go, csi_attacher.go) with WaitForAttach's publish_context
// (attach.go), the mounter's SetUp and TearDown (publish.go, csi_mounter.go),
// the block mapper (block.go, csi_block.go), the requests' capabilities and
// access modes (request.go, capabilities.go, csi_client.go), pod info and
// service account tokens in volume_context (podinfo.go, tokens.go,
// tokensource.go: csi_util.go, pkg/kubelet/token/token_manager.go),
// secrets (secrets.go), SELinux mount options (selinux.go,
// pkg/volume/util/selinux.go), fsGroup (fsgroup.go, pkg/volume/volume_linux.go),
// the volume spec (volume.go, volumemode.go: pkg/volume/plugins.go Spec,
// pkg/volume/util), and the operation errors (errors.go,
// pkg/volume/util/types and csi_client.go's isFinalError).
//
// It imports node/rootdir and node/release, never the volume manager above it.
package csi
