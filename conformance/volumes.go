package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// volumePool hands out the run's PersistentVolumes, one scenario per
// volume at a time: the first is the run's volume; when the driver made it
// by CreateVolume, up to max-1 more are made on demand.
type volumePool struct {
	free      chan *Volume
	mu        sync.Mutex
	made, max int
	canCreate bool
	extra     []*Volume // made for the pool, deleted at the end
}

func newVolumePool(first *Volume, max int, canCreate bool) *volumePool {
	p := &volumePool{free: make(chan *Volume, max), made: 1, max: max, canCreate: canCreate}
	p.free <- first
	return p
}

// take returns a free volume, a new one from create if none is free and
// the pool may grow, else waits for one.
func (p *volumePool) take(ctx context.Context, create func(context.Context) *Volume) (*Volume, error) {
	select {
	case v := <-p.free:
		return v, nil
	default:
	}
	if p.grow() {
		if v := create(ctx); v.Err == nil {
			p.mu.Lock()
			p.extra = append(p.extra, v)
			p.mu.Unlock()
			return v, nil
		}
		// No further volume: wait for one, as without CreateVolume.
	}
	select {
	case v := <-p.free:
		return v, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// grow reserves a new volume when the pool may make one.
func (p *volumePool) grow() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.canCreate || p.made >= p.max {
		return false
	}
	p.made++
	return true
}

func (p *volumePool) put(v *Volume) { p.free <- v }

// prepareVolume decides the PersistentVolume of the run: the given handle,
// a volume made by CreateVolume (1Gi) when the driver can, or the default
// handle.
func (env *runEnv) prepareVolume(ctx context.Context) *Volume {
	v := &Volume{Handle: env.cfg.VolumeHandle, Attributes: maps.Clone(env.cfg.VolumeAttributes)}
	if v.Handle != "" {
		return v
	}
	if !env.info.Creates() {
		v.Handle = DefaultVolumeHandle
		return v
	}
	return env.createVolume(ctx)
}

// createVolume makes a 1Gi filesystem volume by CreateVolume, as the
// external-provisioner would for a claim.
func (env *runEnv) createVolume(ctx context.Context) *Volume {
	return env.createVolumeOf(ctx, false)
}

// createVolumeOf makes a 1Gi volume by CreateVolume, a block one for a
// claim with volumeMode: Block.
func (env *runEnv) createVolumeOf(ctx context.Context, block bool) *Volume {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	v := &Volume{Name: "csi-kubelet-sim-conformance-" + hex.EncodeToString(b), Created: true}
	tr := env.newTrace()
	env.addTrace("volume", tr)
	conn := &csiclient.Recorder{Next: env.cfg.Conn, Trace: tr}
	cctx, cancel := context.WithTimeout(csiclient.WithLabels(ctx, csiclient.Labels{Component: "provision", Operation: "CreateVolume"}), env.cfg.Timeout)
	defer cancel()
	size := env.cfg.Class.size()
	v.Size = size.String()
	req := &csi.CreateVolumeRequest{
		Name:               v.Name,
		CapacityRange:      &csi.CapacityRange{RequiredBytes: size.Value()},
		VolumeCapabilities: []*csi.VolumeCapability{env.controllerCapability(corev1.ReadWriteOnce, block)},
	}
	if c := env.cfg.Class; c != nil {
		req.Parameters = maps.Clone(c.Parameters)
	}
	// Written down before the call, so that a kill -9 during the run
	// leaves `cleanup` the volume to delete.
	if err := env.record.Creating(req); err != nil {
		v.Err = fmt.Errorf("CreateVolume %s not called: %w", v.Name, err)
		return v
	}
	resp, err := csi.NewControllerClient(conn).CreateVolume(cctx, req)
	if err != nil {
		v.Err = fmt.Errorf("CreateVolume %s: %w", v.Name, err)
		if rerr := env.record.Failed(v.Name, err); rerr != nil {
			v.Err = fmt.Errorf("%w; %v", v.Err, rerr)
		}
		return v
	}
	v.Handle = resp.GetVolume().GetVolumeId()
	if err := env.record.Created(v.Name, v.Handle); err != nil {
		v.Err = err
		v.Created = true
		return v
	}
	// The external-provisioner copies the volume's context into the PV's
	// volumeAttributes; the user's attributes go on top.
	attrs := maps.Clone(resp.GetVolume().GetVolumeContext())
	if attrs == nil {
		attrs = map[string]string{}
	}
	maps.Copy(attrs, env.cfg.VolumeAttributes)
	v.Attributes = attrs
	return v
}

// deleteVolumes deletes the volumes CreateVolume made: the run's volume
// (a failure is its Err) and the pool's further ones (a failure goes on
// the run's volume's Err, unless it has one).
func (env *runEnv) deleteVolumes(ctx context.Context) {
	if env.volume == nil {
		return
	}
	if env.pool != nil {
		for _, v := range env.pool.extra {
			if err := env.deleteVolume(ctx, v); err != nil && env.volume.Err == nil {
				env.volume.Err = err
			}
		}
		env.volume.Extra = len(env.pool.extra)
	}
	if err := env.deleteVolume(ctx, env.volume); err != nil {
		env.volume.Err = err
	}
}

// deleteVolume deletes a volume CreateVolume made.
func (env *runEnv) deleteVolume(ctx context.Context, v *Volume) error {
	if v == nil || !v.Created || v.Handle == "" {
		return nil
	}
	tr := env.newTrace()
	env.addTrace("volume", tr)
	conn := &csiclient.Recorder{Next: env.cfg.Conn, Trace: tr}
	cctx, cancel := context.WithTimeout(csiclient.WithLabels(ctx, csiclient.Labels{Component: "provision", Operation: "DeleteVolume"}), env.cfg.Timeout)
	defer cancel()
	if _, err := csi.NewControllerClient(conn).DeleteVolume(cctx, &csi.DeleteVolumeRequest{VolumeId: v.Handle}); err != nil {
		return fmt.Errorf("DeleteVolume %s: %w (the volume may be left on the storage)", v.Handle, err)
	}
	return env.record.Deleted(v.Name, v.Handle)
}

// controllerCapability is the VolumeCapability the external-provisioner
// and external-attacher send for a PV with one access mode, using the
// controller's SINGLE_NODE_MULTI_WRITER mapping: Block{} for a block PV.
func (env *runEnv) controllerCapability(mode corev1.PersistentVolumeAccessMode, block bool) *csi.VolumeCapability {
	snmw := env.info.HasController(csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER)
	m := csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	switch {
	case mode == corev1.ReadWriteOnce && snmw:
		m = csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
	case mode == corev1.ReadWriteOncePod && snmw:
		m = csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
	}
	access := &csi.VolumeCapability_AccessMode{Mode: m}
	if block {
		return &csi.VolumeCapability{AccessMode: access, AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}}
	}
	mount := &csi.VolumeCapability_MountVolume{}
	if c := env.cfg.Class; c != nil {
		mount.FsType, mount.MountFlags = c.FsType, slices.Clone(c.MountOptions)
	}
	return &csi.VolumeCapability{AccessMode: access, AccessType: &csi.VolumeCapability_Mount{Mount: mount}}
}
