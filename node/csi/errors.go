package csi

// errors.go follows pkg/volume/util/types (transient and uncertain operation
// errors) and csi_client.go isFinalError.

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Kind is how the kubelet's operation generator treats a failed operation
// (docs/kubelet.md §12; pkg/volume/util/types).
type Kind int

const (
	// Final: the operation finished and failed; the kubelet removes the
	// directories it made and forgets the volume.
	Final Kind = iota
	// Uncertain: the driver may still be working (UncertainProgressError);
	// the kubelet keeps the directories and will unpublish/unstage on
	// teardown even though the mount never succeeded.
	Uncertain
	// Transient: the kubelet could not even start (missing driver, secret,
	// VolumeAttachment, token); no state change, no clean-up.
	Transient
)

func (k Kind) String() string {
	switch k {
	case Uncertain:
		return "uncertain"
	case Transient:
		return "transient"
	}
	return "final"
}

// KindMark is how a failure event in the trace says what the kubelet
// makes of it: " (uncertain)" and " (transient)" change what it does next;
// a final error has no mark, for "final" would read as "not retried",
// and the kubelet retries every failed operation (docs/kubelet.md §12).
func KindMark(k Kind) string {
	if k == Final {
		return ""
	}
	return " (" + k.String() + ")"
}

// OpError is an error of one kubelet step, with the kind the kubelet gives it.
type OpError struct {
	Kind Kind
	Err  error
}

func (e *OpError) Error() string { return e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

func Transientf(format string, a ...any) error {
	return &OpError{Kind: Transient, Err: fmt.Errorf(format, a...)}
}

func AsUncertain(err error) error { return &OpError{Kind: Uncertain, Err: err} }

// KindOf classifies an error the way IsOperationFinishedError and
// IsUncertainProgressError do.
func KindOf(err error) Kind {
	var oe *OpError
	if errors.As(err, &oe) {
		return oe.Kind
	}
	return Final
}

// IsFinalError is isFinalError in csi_client.go: codes that mean the driver
// may still be working, and anything that is not a gRPC status, are not
// final.
func IsFinalError(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

// ClassifyRPC wraps a NodeStage/NodePublish error as the kubelet's client
// does: non-final errors become uncertain.
func ClassifyRPC(err error) error {
	if err == nil {
		return nil
	}
	if !IsFinalError(err) {
		return AsUncertain(err)
	}
	return err
}

// VolumeError is a failed kubelet operation on one volume, worded as the
// pod event the kubelet emits (generateVolumeMsg in operation_executor.go):
// `MountVolume.SetUp failed for volume "pv-1" : <cause>`.
type VolumeError struct {
	Operation string // MountVolume.SetUp, MountVolume.MountDevice, ...
	// Prefix replaces "<Operation> failed" where the kubelet words the event
	// otherwise ("MountVolume.Setup failed while expanding volume").
	Prefix string
	Volume string // volume.Spec.Name(): the PV name, or the inline volume's name
	Pod    string
	Kind   Kind
	Err    error
}

func (e *VolumeError) Error() string {
	prefix := e.Prefix
	if prefix == "" {
		prefix = e.Operation + " failed"
	}
	return fmt.Sprintf("%s for volume %q : %v", prefix, e.Volume, e.Err)
}

func (e *VolumeError) Unwrap() error { return e.Err }

// prefixedError carries the event prefix of the step that failed when one
// operation has several ("UnmapVolume.UnmapBlockVolume failed" before
// "UnmapVolume.UnmapPodDevice failed").
type prefixedError struct {
	prefix string
	err    error
}

func (e *prefixedError) Error() string { return e.err.Error() }
func (e *prefixedError) Unwrap() error { return e.err }

// EventPrefix returns the prefix an error carries, or def.
func EventPrefix(err error, def string) string {
	var pe *prefixedError
	if errors.As(err, &pe) {
		return pe.prefix
	}
	return def
}
