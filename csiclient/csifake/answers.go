package csifake

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// answer is the driver's normal handling: the required-field and state
// checks, the state change, then the canned response or the one built from
// the configuration.
func (d *Driver) answer(method string, req proto.Message) (proto.Message, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp, err := d.handle(req)
	canned, ok := d.responses[method]
	switch {
	case ok && (err == nil || status.Code(err) == codes.Unimplemented):
		return proto.Clone(canned), nil
	case err != nil:
		return nil, err
	}
	return resp, nil
}

// handle is the per-method logic; d.mu is held.
func (d *Driver) handle(req proto.Message) (proto.Message, error) {
	switch r := req.(type) {
	case *csi.GetPluginInfoRequest:
		return &csi.GetPluginInfoResponse{Name: d.cfg.Name, VendorVersion: d.cfg.VendorVersion}, nil
	case *csi.GetPluginCapabilitiesRequest:
		return d.pluginCapabilities(), nil
	case *csi.ProbeRequest:
		return &csi.ProbeResponse{}, nil
	case *csi.NodeGetInfoRequest:
		resp := &csi.NodeGetInfoResponse{NodeId: d.cfg.NodeID, MaxVolumesPerNode: d.cfg.MaxVolumesPerNode}
		if d.cfg.Topology != nil {
			resp.AccessibleTopology = &csi.Topology{Segments: maps.Clone(d.cfg.Topology)}
		}
		return resp, nil
	case *csi.NodeGetCapabilitiesRequest:
		return d.nodeCapabilities(), nil
	case *csi.NodeStageVolumeRequest:
		return d.stage(r)
	case *csi.NodeUnstageVolumeRequest:
		return d.unstage(r)
	case *csi.NodePublishVolumeRequest:
		return d.publish(r)
	case *csi.NodeUnpublishVolumeRequest:
		return d.unpublish(r)
	case *csi.NodeGetVolumeStatsRequest:
		if r.GetVolumeId() == "" || r.GetVolumePath() == "" {
			return nil, status.Error(codes.InvalidArgument, "csifake: NodeGetVolumeStats needs volume_id and volume_path")
		}
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: 100, Used: 40, Available: 60}}}, nil
	case *csi.NodeExpandVolumeRequest:
		if r.GetVolumeId() == "" || r.GetVolumePath() == "" {
			return nil, status.Error(codes.InvalidArgument, "csifake: NodeExpandVolume needs volume_id and volume_path")
		}
		return &csi.NodeExpandVolumeResponse{CapacityBytes: r.GetCapacityRange().GetRequiredBytes()}, nil
	}
	return nil, status.Errorf(codes.Unimplemented, "csifake: %T is not implemented", req)
}

func (d *Driver) pluginCapabilities() *csi.GetPluginCapabilitiesResponse {
	resp := &csi.GetPluginCapabilitiesResponse{}
	for _, t := range d.cfg.PluginCapabilities {
		resp.Capabilities = append(resp.Capabilities, &csi.PluginCapability{
			Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}},
		})
	}
	return resp
}

func (d *Driver) nodeCapabilities() *csi.NodeGetCapabilitiesResponse {
	resp := &csi.NodeGetCapabilitiesResponse{}
	for _, t := range d.cfg.Capabilities {
		resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}},
		})
	}
	return resp
}

func (d *Driver) stages() bool {
	return slices.Contains(d.cfg.Capabilities, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
}

// stage checks the arguments as csi-sanity expects (InvalidArgument) and
// records the volume; staging the same volume at another path is
// FailedPrecondition, staging it again at the same path succeeds.
func (d *Driver) stage(r *csi.NodeStageVolumeRequest) (proto.Message, error) {
	switch {
	case r.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "csifake: NodeStageVolume without volume_id")
	case r.GetStagingTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "csifake: NodeStageVolume without staging_target_path")
	case r.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "csifake: NodeStageVolume without volume_capability")
	}
	if p, ok := d.staged[r.GetVolumeId()]; ok && p != r.GetStagingTargetPath() && !d.cfg.Lenient {
		return nil, status.Errorf(codes.FailedPrecondition, "csifake: volume %s is staged at %s, not %s", r.GetVolumeId(), p, r.GetStagingTargetPath())
	}
	d.staged[r.GetVolumeId()] = r.GetStagingTargetPath()
	return &csi.NodeStageVolumeResponse{}, nil
}

func (d *Driver) unstage(r *csi.NodeUnstageVolumeRequest) (proto.Message, error) {
	if r.GetVolumeId() == "" || r.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "csifake: NodeUnstageVolume needs volume_id and staging_target_path")
	}
	delete(d.staged, r.GetVolumeId())
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// publish checks the arguments and, for a driver that stages, that the
// volume was staged at staging_target_path (FailedPrecondition, the code
// host-path answers), then records it and makes the target.
func (d *Driver) publish(r *csi.NodePublishVolumeRequest) (proto.Message, error) {
	switch {
	case r.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "csifake: NodePublishVolume without volume_id")
	case r.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "csifake: NodePublishVolume without target_path")
	case r.GetVolumeCapability() == nil:
		return nil, status.Error(codes.InvalidArgument, "csifake: NodePublishVolume without volume_capability")
	}
	if err := d.checkStaged(r); err != nil {
		return nil, err
	}
	if d.cfg.ManageTargets {
		if err := makeTarget(r.GetTargetPath(), r.GetVolumeCapability().GetBlock() != nil); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	if d.published[r.GetVolumeId()] == nil {
		d.published[r.GetVolumeId()] = map[string]string{}
	}
	d.published[r.GetVolumeId()][r.GetTargetPath()] = r.GetStagingTargetPath()
	return &csi.NodePublishVolumeResponse{}, nil
}

// checkStaged: a driver that stages publishes a volume from where it was
// staged. An empty staging_target_path is an inline (ephemeral) volume,
// which the kubelet never stages; it must then not be a staged one.
func (d *Driver) checkStaged(r *csi.NodePublishVolumeRequest) error {
	if !d.stages() || d.cfg.Lenient {
		return nil
	}
	p, ok := d.staged[r.GetVolumeId()]
	switch {
	case r.GetStagingTargetPath() == "" && ok:
		return status.Errorf(codes.FailedPrecondition, "csifake: volume %s is staged at %s but published without staging_target_path", r.GetVolumeId(), p)
	case r.GetStagingTargetPath() != "" && p != r.GetStagingTargetPath():
		return status.Errorf(codes.FailedPrecondition, "csifake: volume %s is not staged at %q", r.GetVolumeId(), r.GetStagingTargetPath())
	}
	return nil
}

// unpublish forgets the target; an unknown one is not an error (the
// call is idempotent).
func (d *Driver) unpublish(r *csi.NodeUnpublishVolumeRequest) (proto.Message, error) {
	if r.GetVolumeId() == "" || r.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "csifake: NodeUnpublishVolume needs volume_id and target_path")
	}
	if d.cfg.ManageTargets {
		if err := os.Remove(r.GetTargetPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	delete(d.published[r.GetVolumeId()], r.GetTargetPath())
	if len(d.published[r.GetVolumeId()]) == 0 {
		delete(d.published, r.GetVolumeId())
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// makeTarget is what a driver's mount leaves: the target directory, or for
// a block volume the file the device is bound to.
func makeTarget(p string, block bool) error {
	if !block {
		return os.MkdirAll(p, 0o750)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// Staged returns the staged volumes: volume_id -> staging_target_path.
func (d *Driver) Staged() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.staged)
}

// Published returns the published targets, sorted, of one volume.
func (d *Driver) Published(volumeID string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.published[volumeID]))
}

// PublishedVolumes returns the volumes with at least one target, sorted.
func (d *Driver) PublishedVolumes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.published))
}
