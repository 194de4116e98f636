package sidecars

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// CleanupConfig is what `cleanup` gives the sidecars.
type CleanupConfig struct {
	RootDir string
	Conn    grpc.ClientConnInterface // the controller socket
	Trace   *csiclient.Trace
	Timeout time.Duration
	// Endpoint is the controller socket as the run named it, and
	// HoldersDir the register of provisioned volumes (DefaultHoldersDir
	// when empty): a volume another live run holds is kept for it.
	Endpoint, HoldersDir string

	// Force (`cleanup --force`): an attachment or a volume the driver
	// refused to unpublish or delete (NotFound: it no longer knows it) is
	// dropped from the record, said in the trace, instead of keeping the
	// record (and the root dir) for ever.
	Force bool

	driver string // GetPluginInfo's name, once asked
}

// driverName asks the driver its name once: the register of provisioned
// volumes is keyed by it.
func (cfg *CleanupConfig) driverName(ctx context.Context) (string, error) {
	if cfg.driver != "" {
		return cfg.driver, nil
	}
	ictx, cancel := callCtx(ctx, *cfg, "provision", "Cleanup", "")
	defer cancel()
	info, err := csi.NewIdentityClient(cfg.Conn).GetPluginInfo(ictx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return "", err
	}
	cfg.driver = info.GetName()
	return cfg.driver, nil
}

// Cleanup finishes what interrupted runs' records under root list, after
// the kubelet's own recovery has unstaged the volumes: each attachment
// still published is unpublished (ControllerUnpublishVolume), then each
// volume created and not deleted is deleted (DeleteVolume; a volume whose
// CreateVolume never answered is asked for again by the same name, which
// CSI makes idempotent, to learn its handle). The deleter secrets are not
// sent: they were never written to disk. A record goes once all it lists
// is done. It returns what it could not do.
func Cleanup(ctx context.Context, cfg CleanupConfig) []error {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.Conn = &csiclient.Recorder{Next: cfg.Conn, Trace: cfg.Trace}
	paths, err := Records(cfg.RootDir)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, p := range paths {
		errs = append(errs, cleanupRecord(ctx, &cfg, p)...)
	}
	return errs
}

func cleanupRecord(ctx context.Context, cfg *CleanupConfig, p string) []error {
	pend, err := readRecord(p)
	if err != nil {
		return []error{fmt.Errorf("controller record %s: %w", p, err)}
	}
	rec, err := openRecord(p, os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return []error{fmt.Errorf("controller record %s: %w", p, err)}
	}
	r := &record{path: p, f: rec}
	var errs []error
	client := csi.NewControllerClient(cfg.Conn)
	driver := ""
	if len(pend.volumes) > 0 {
		if driver, err = cfg.driverName(ctx); err != nil {
			rec.Close()
			return []error{fmt.Errorf("GetPluginInfo, to learn whether another run holds the volumes of %s: %w", p, err)}
		}
	}
	for i := len(pend.published) - 1; i >= 0; i-- {
		e := pend.published[i]
		cctx, cancel := callCtx(ctx, *cfg, "attacher", "Detach", e.Handle)
		_, err := client.ControllerUnpublishVolume(cctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: e.Handle, NodeId: e.NodeID})
		cancel()
		if err != nil {
			err = fmt.Errorf("ControllerUnpublishVolume %s from node %s: %w", e.Handle, e.NodeID, err)
			if !forced(ctx, *cfg, err, "attacher", "Detach", e.Handle, "the record of the attachment of "+e.Handle+" to node "+e.NodeID) {
				errs = append(errs, err)
				continue
			}
		}
		errs = appendErr(errs, r.write(entry{Kind: kindUnpublished, Handle: e.Handle, NodeID: e.NodeID}))
	}
	for i := len(pend.volumes) - 1; i >= 0; i-- {
		errs = appendErr(errs, cleanupVolume(ctx, *cfg, client, r, driver, pend.volumes[i]))
	}
	if len(errs) == 0 {
		r.remove()
	} else {
		rec.Close()
	}
	return errs
}

// cleanupVolume deletes one volume a record lists.
func cleanupVolume(ctx context.Context, cfg CleanupConfig, client csi.ControllerClient, r *record, driver string, v pendingVolume) error {
	other, unlock, err := HeldElsewhere(cfg.HoldersDir, driver, cfg.Endpoint, v.name)
	if err != nil {
		return fmt.Errorf("volume %s: %w", v.name, err)
	}
	defer unlock()
	if other != "" {
		lctx := csiclient.WithLabels(ctx, csiclient.Labels{Component: "provision", Operation: "Delete", Volume: v.name})
		cfg.Trace.Note(lctx, false, fmt.Sprintf("volume %s kept: in use by the run of root dir %s, which deletes it", v.name, other))
		return r.write(entry{Kind: kindKept, Name: v.name, Handle: v.handle})
	}
	handle := v.handle
	if handle == "" {
		req := &csi.CreateVolumeRequest{}
		if err := protojson.Unmarshal(v.request, req); err != nil {
			return fmt.Errorf("volume %s: the record's CreateVolume request: %w", v.name, err)
		}
		cctx, cancel := callCtx(ctx, cfg, "provision", "Provision", v.name)
		resp, err := client.CreateVolume(cctx, req)
		cancel()
		if err != nil {
			return fmt.Errorf("volume %s: CreateVolume again to learn its handle: %w (the volume may be left on the driver)", v.name, err)
		}
		handle = resp.GetVolume().GetVolumeId()
	}
	cctx, cancel := callCtx(ctx, cfg, "provision", "Delete", v.name)
	defer cancel()
	if _, err := client.DeleteVolume(cctx, &csi.DeleteVolumeRequest{VolumeId: handle}); err != nil {
		err = fmt.Errorf("DeleteVolume %s (volume %s): %w; the volume is left on the driver: handle %s", handle, v.name, err, handle)
		if !forced(ctx, cfg, err, "provision", "Delete", v.name, "the record of volume "+v.name+" (handle "+handle+")") {
			return err
		}
	}
	return r.write(entry{Kind: kindDeleted, Name: v.name, Handle: handle})
}

// forced tells whether --force drops what a refused call left in the
// record: only after the driver answered (a status of its own), never
// when it could not be reached or did not answer in time.
func forced(ctx context.Context, cfg CleanupConfig, err error, component, op, volume, what string) bool {
	if !cfg.Force || ctx.Err() != nil {
		return false
	}
	if _, answered := csiclient.DriverStatus(err); !answered || csiclient.Classify(err) != csiclient.Answered {
		return false
	}
	lctx := csiclient.WithLabels(ctx, csiclient.Labels{Component: component, Operation: op, Volume: volume})
	cfg.Trace.Warn(lctx, "--force: dropped "+what+" after the driver refused: "+err.Error())
	return true
}

func callCtx(ctx context.Context, cfg CleanupConfig, component, op, volume string) (context.Context, context.CancelFunc) {
	return context.WithTimeout(csiclient.WithLabels(ctx, csiclient.Labels{Component: component, Operation: op, Volume: volume}), cfg.Timeout)
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

// HasRecords tells whether root holds a record of the sidecars.
func HasRecords(root string) bool {
	rs, _ := filepath.Glob(filepath.Join(root, recordDir, "*"+recordSuffix))
	return len(rs) > 0
}
