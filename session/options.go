package session

import (
	"context"
	"fmt"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/admission"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/controlplane"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/replay"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/rootdirs"
)

// commonOptions are the flags `run` and `plan` share.
type CommonOptions struct {
	// force is `cleanup --force` (node.Config.Force).
	Force        bool
	Filenames    []string
	Recursive    bool
	NodeName     string
	SELinux      SelinuxFlag
	SELinuxLevel string
	ShowSecrets  bool
	Verbose      int
	RootDirFlag
	ReleaseFlags
	OutputFlag
	TimeoutFlag
	PodUID       string
	MaxAttempts  int
	ExpandTo     string
	RetryFor     time.Duration
	VolumeHandle string
	ServiceAccountOptions
	Admission admission.Options
	Live      replay.Options
	Apiserver controlplane.Options // flags registered by run and load
	// Observers see every call and step as it happens (a Go caller's
	// progress; the command prints through its own).
	Observers []csiclient.Sink
	// Printer sees the session as it goes: the command's printer; nil:
	// nothing is printed.
	Printer Observer

	cluster       *manifests.Cluster
	syncFrequency time.Duration // run's --sync-frequency, for the summary
	selinux       SELinuxHost   // the host, detected or simulated
	defaultPod    string        // why the default pod is used; empty: the input has pods
	// lockAs: the command takes the root dir's lock under this name
	// (run, load, conformance); empty: it makes nothing there (plan).
	lockAs   string
	rootLock *node.RootLock
	// notices take the warnings and notes when the command's observer is
	// not a session's (conformance's); nil: Printer's.
	notices Notices
}

// prepare is what every command that talks to a driver does before it
// starts: the options completed and the manifests loaded, the socket
// checked, the root dir made (the directories it made are returned).
func (o *CommonOptions) prepare(ctx context.Context, s Streams, ep csiclient.Endpoint) ([]string, error) {
	if err := o.completeInput(ctx, s, o.tell().Warning); err != nil {
		return nil, err
	}
	if err := ep.Check(); err != nil && !o.Apiserver.Enabled { // --apiserver waits for it
		return nil, WithCode(ExitEnvironment, err)
	}
	created, err := o.prepareRootDir()
	if err != nil || !o.Apiserver.Enabled {
		return created, err
	}
	if err := o.startAPIServer(ctx, ep); err != nil {
		o.rootLock.Release()
		rootdirs.Remove(created)
		return nil, err
	}
	return created, nil
}

// observer is the session's observer: the command's printer, or none.
func (o *CommonOptions) observer() Observer {
	if o.Printer == nil {
		return noObserver{}
	}
	return o.Printer
}

// tell is where the session's warnings and notes go.
func (o *CommonOptions) tell() Notices {
	if o.notices != nil {
		return o.notices
	}
	return o.observer()
}

// WarnTo writes warnings to s.Err, for the commands whose engine prints
// itself (validate, tokens).
func WarnTo(s Streams) func(string) {
	// A warning can quote the input or a cluster's answer: through the
	// one escaping function, as every printed field.
	return func(msg string) { fmt.Fprintf(s.Err, "warning: %s\n", csiclient.Redactor{}.Text(msg)) }
}
