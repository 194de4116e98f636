package session

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/rootdirs"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
)

// cleanupOptions are the flags of `cleanup`.
type CleanupOptions struct {
	CommonOptions
	EndpointFlag
	Streams
	ControllerEndpoint string
}

// complete takes the root dir (required), the driver's socket and the
// release.
func (co *CleanupOptions) Complete([]string) error {
	if co.RootDir == "" {
		return WithCode(ExitUsage, fmt.Errorf("cleanup: --root-dir is required"))
	}
	if err := co.completeEndpoint(); err != nil {
		return err
	}
	if err := co.completeRootDir(); err != nil {
		return err
	}
	return co.CompleteRelease()
}

func (co *CleanupOptions) Validate() error { return co.ValidateOutput() }

// run finishes what interrupted runs left under a root dir: the
// kubelet's reconstruction of volumes after a restart, then their
// teardown through the driver. Only what the runs' journals list is
// touched.
func (co *CleanupOptions) Run(ctx context.Context) error {
	o, s, ep := &co.CommonOptions, co.Streams, co.endpoint
	var err error
	if _, err := os.Lstat(o.RootDir); os.IsNotExist(err) {
		o.observer().NothingToDo(NothingToDo{RootDir: o.RootDir, Missing: true})
		return nil
	}
	if o.RootDir, err = rootdirs.Resolve(o.RootDir, o.tell().Note); err != nil {
		return err
	}
	if o.NodeName == "" {
		if o.NodeName, err = os.Hostname(); err != nil {
			return WithCode(ExitEnvironment, fmt.Errorf("node name: %w", err))
		}
	}
	// A missing driver socket is no reason to refuse at once: what needs
	// no driver (a control plane's dir, the directories of a run killed
	// before it mounted anything) is finished without one (cleanupRoot).
	locks, roots, err := rootdirs.LockForCleanup(o.RootDir, o.tell().Note)
	if err != nil {
		return err
	}
	if len(roots) == 0 {
		locks[o.RootDir].Release()
		o.observer().NothingToDo(NothingToDo{RootDir: o.RootDir})
		return nil
	}
	var firstErr error
	// Deepest first: a `conformance` run's scenarios' roots lie under its
	// root dir, whose record lists the volume they staged; it is deleted
	// (DeleteVolume) only once they are torn down.
	for i := len(roots) - 1; i >= 0; i-- {
		root := roots[i]
		if ctx.Err() != nil {
			break // interrupted: the roots not reached are left as they are
		}
		if err := cleanupRoot(ctx, o, root, locks[root], ep, s, co.ControllerEndpoint); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if _, handed := slices.BinarySearch(roots, o.RootDir); !handed && firstErr == nil {
		locks[o.RootDir].Release()
	}
	return firstErr
}

// cleanupRoot recovers one kubelet root dir, holding its lock.
func cleanupRoot(ctx context.Context, o *CommonOptions, root string, lock *node.RootLock, ep csiclient.Endpoint, s Streams, controllerEP string) error {
	ro := *o
	ro.RootDir = root
	ro.cluster = manifests.New()
	ro.rootLock = lock
	ss := newSession("cleanup", &ro, s, &csiclient.Dialer{Endpoint: ep}, false, nil)
	ss.endpoint = string(ep)
	if err := cleanupControlPlane(ss, root); err != nil {
		return err
	}
	if err := ep.Check(); err != nil {
		return cleanupWithoutDriver(ctx, ss, root, lock, err)
	}
	ss.header()
	// After the kubelet's teardown, what the run's sidecars left: detach,
	// then delete (sidecars.Cleanup), with the root dir still locked.
	out := ss.kubelet.Recover(ctx, func(ctx context.Context) []error {
		return cleanupSidecars(ctx, ss, ep, controllerEP)
	})
	// Recover and the sidecars' cleanup stop at the first Ctrl-C (their
	// calls take ctx); what they cut short is the interrupt's, not the
	// driver's.
	out.Interrupted = ctx.Err() != nil
	exit := ss.exitErr(out)
	if exit != nil && !o.Force && ExitCode(exit) == ExitFailed && driverRefused(out) {
		exit = WithCode(ExitFailed, fmt.Errorf("%w; cleanup --force removes what the journal recorded after the driver refused: it unmounts and removes the targets and staging paths listed there (nothing else) and drops the controller records: csi-kubelet-sim cleanup --force --root-dir %s --endpoint %s", exit, root, ep))
	}
	ss.summary(out, exit)
	return exit
}

// driverRefused tells whether the driver answered a teardown call of
// `cleanup` with an error (NotFound: it no longer knows the volume), as
// opposed to not being reached or not answering in time.
func driverRefused(out *node.Outcome) bool {
	errs := append([]error{out.FirstVolumeError()}, out.TeardownErrs...)
	for _, err := range errs {
		if err == nil {
			continue
		}
		if _, ok := csiclient.DriverStatus(err); ok && csiclient.Classify(err) == csiclient.Answered {
			return true
		}
	}
	return false
}

// cleanupWithoutDriver finishes a root dir whose driver socket is
// missing, when nothing its journals and records list needs the driver
// (a run killed before anything was mounted: its directories); otherwise
// it names what does and exits 3, having done what needed no driver (the
// control plane's dir, removed before).
func cleanupWithoutDriver(ctx context.Context, ss *session, root string, lock *node.RootLock, epErr error) error {
	work, err := node.DriverWork(root)
	if err != nil {
		lock.Release()
		return rootdirs.Err(fmt.Errorf("cleanup --root-dir %s: %w", root, err))
	}
	if sidecars.HasRecords(root) {
		work = append(work, "the volumes and attachments the run's provisioner and attacher recorded (ControllerUnpublishVolume, DeleteVolume)")
	}
	if len(work) > 0 {
		lock.Release()
		return WithCode(ExitEnvironment, fmt.Errorf("%w; what remains under %s needs the driver: %s; start it and run cleanup again", epErr, root, strings.Join(work, ", ")))
	}
	ss.announce(fmt.Sprintf("no driver at %s: nothing the journals list needs it; what the run made is removed without it", ss.endpoint))
	ss.header()
	out := ss.kubelet.RecoverWithoutDriver(ctx)
	exit := ss.exitErr(out)
	ss.summary(out, exit)
	return exit
}
