package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
)

// sidecarOptions are the flags of the external-provisioner and
// external-attacher that `run` and `load` simulate for claims with a
// StorageClass.
type SidecarOptions struct {
	ControllerEndpoint  string
	KeepVolumes         bool
	ExtraCreateMetadata bool

	controller *sidecars.Controllers
}

// controllerConn is the controller socket: --controller-endpoint, or
// the node's.
func (o *SidecarOptions) controllerConn(node csiclient.Endpoint) (*csiclient.Dialer, string, error) {
	if o.ControllerEndpoint == "" {
		return &csiclient.Dialer{Endpoint: node}, string(node), nil
	}
	ep, err := csiclient.ParseEndpoint(o.ControllerEndpoint)
	if err != nil {
		return nil, "", WithCode(ExitUsage, fmt.Errorf("--controller-endpoint: %w", err))
	}
	if err := ep.Check(); err != nil {
		return nil, "", WithCode(ExitEnvironment, fmt.Errorf("--controller-endpoint: %w", err))
	}
	return &csiclient.Dialer{Endpoint: ep}, string(ep), nil
}

// attach builds the run's sidecars into the session.
func (o *SidecarOptions) attach(ss *session, node csiclient.Endpoint) error {
	conn, ep, err := o.controllerConn(node)
	if err != nil {
		return err
	}
	replay, prefix := ss.opts.Live.Pod != "", ""
	if replay && ss.opts.Live.ProvisionUnbound {
		id, err := runID()
		if err != nil {
			return WithCode(ExitEnvironment, err)
		}
		prefix = "csi-kubelet-sim-" + id + "-"
	}
	o.controller = sidecars.New(sidecars.Config{
		Replay:              replay,
		VolumeNamePrefix:    prefix,
		Cluster:             ss.opts.cluster,
		Conn:                conn,
		Trace:               ss.trace,
		RootDir:             ss.opts.RootDir,
		NodeName:            ss.opts.NodeName,
		Timeout:             ss.opts.Timeout,
		ExtraCreateMetadata: o.ExtraCreateMetadata,
		KeepVolumes:         o.KeepVolumes,
		Endpoint:            ep,
		OnPV:                ss.obs.PersistentVolume,
	})
	ss.sidecars = o.controller
	return nil
}

// runID names a replay's own volumes: 8 random hex digits.
func runID() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// controllerExit is the exit of a run whose sidecars failed before the
// pods: the input (2) or the driver (1).
func controllerExit(err error) error {
	if sidecars.IsInputError(err) {
		return WithCode(ExitUsage, err)
	}
	return WithCode(ExitFailed, err)
}

// cleanupSidecars is `cleanup`'s part for the sidecars' records.
func cleanupSidecars(ctx context.Context, ss *session, node csiclient.Endpoint, controllerEP string) []error {
	o := &SidecarOptions{ControllerEndpoint: controllerEP}
	conn, ep, err := o.controllerConn(node)
	if err != nil {
		return []error{err}
	}
	return sidecars.Cleanup(ctx, sidecars.CleanupConfig{RootDir: ss.opts.RootDir, Conn: conn, Trace: ss.trace, Timeout: ss.opts.Timeout, Endpoint: ep, Force: ss.opts.Force})
}

// plannedSidecars are `plan`'s provisioner and attacher: those of `run`,
// with the planned driver answering for the controller.
func plannedSidecars(ss *session, conn *csiclient.Planned) *sidecars.Controllers {
	prefix := ""
	if ss.opts.Live.Pod != "" {
		prefix = "csi-kubelet-sim-planned-" // run names its own csi-kubelet-sim-<run id>-
	}
	ss.sidecars = sidecars.New(sidecars.Config{
		Replay:           ss.opts.Live.Pod != "",
		VolumeNamePrefix: prefix,
		HoldersDir:       sidecars.NoHolders,
		Cluster:          ss.opts.cluster,
		Conn:             conn,
		Trace:            ss.trace,
		RootDir:          ss.opts.RootDir,
		NodeName:         ss.opts.NodeName,
		Timeout:          ss.opts.Timeout,
		Endpoint:         "planned by --controller-capabilities",
		OnPV:             ss.obs.PersistentVolume,
	})
	return ss.sidecars
}
