package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
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
	Admission AdmissionOptions
	Live      LiveOptions
	Apiserver ApiserverOptions // flags registered by run and load
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
	warnOut  io.Writer // where notes on the root dir go (stderr)
}

// completeInput checks the flags and loads the manifests, then runs the
// input's admission, which ctx (the command's: Ctrl-C) can interrupt.
func (o *CommonOptions) completeInput(ctx context.Context, s Streams, warn func(string)) error {
	if err := o.ValidateOutput(); err != nil {
		return err
	}
	// A system directory as the root dir is a usage error, refused before
	// the driver is looked at.
	if err := o.completeRootDir(); err != nil {
		return err
	}
	if err := o.CompleteRelease(); err != nil {
		return err
	}
	if err := o.validateTimeout(); err != nil {
		return err
	}
	if err := o.Live.check(o.Filenames); err != nil {
		return err
	}
	if o.Live.Pod != "" && o.Apiserver.Enabled {
		return WithCode(ExitUsage, errors.New("--pod reads a live cluster, --apiserver makes one: not both"))
	}
	o.Live.nodeGiven = o.NodeName != ""
	var err error
	if o.NodeName == "" {
		if o.NodeName, err = os.Hostname(); err != nil {
			return WithCode(ExitEnvironment, fmt.Errorf("node name: %w", err))
		}
	}
	if err := manifests.ValidatePodUID(o.PodUID, field.NewPath("--pod-uid")); err != nil {
		return WithCode(ExitUsage, err)
	}
	if err := o.ServiceAccountOptions.Complete(); err != nil {
		return err
	}
	o.selinux = o.SELinux.Resolve(hostHasSELinux)
	loader := &manifests.Loader{
		Stdin:     s.In,
		Defaults:  o.Release.APIServerDefaults(),
		Warn:      warn,
		Recursive: o.Recursive,
	}
	if o.Apiserver.Enabled {
		loader.Other = o.Apiserver.collect
	}
	c, err := o.loadInput(ctx, loader, warn)
	if err != nil {
		return err
	}
	o.cluster = c
	o.defaultPod = defaultPodReason(c, o.Filenames)
	if o.ExpandTo != "" {
		size, err := resource.ParseQuantity(o.ExpandTo)
		if err != nil {
			return WithCode(ExitUsage, fmt.Errorf("--expand-to: %w", err))
		}
		c.ExpandPersistentVolumes(size)
	}
	if o.Apiserver.Enabled {
		return nil // the API server runs the input's webhooks itself
	}
	return o.Admission.Run(ctx, c, o.Release.APIServerDefaults(), o.Output, o.Verbose, s)
}

// loadInput reads the manifests, or with --pod the pod from its cluster.
func (o *CommonOptions) loadInput(ctx context.Context, loader *manifests.Loader, warn func(string)) (*manifests.Cluster, error) {
	if o.Live.Pod != "" {
		return o.loadLive(ctx, warn)
	}
	c, err := loader.Load(o.Filenames)
	if err != nil {
		return nil, WithCode(ExitUsage, loader.WithReferences(c, err))
	}
	return c, judgeInput(c, o.Filenames)
}

// prepareRootDir makes the root dir. It returns the directories it
// created, root last, so that they can all be removed afterwards; none when
// the root dir existed.
func (o *CommonOptions) prepareRootDir() (created []string, err error) {
	if o.RootDir == "" {
		d, err := os.MkdirTemp("", "csi-kubelet-sim-")
		if err != nil {
			return nil, WithCode(ExitEnvironment, fmt.Errorf("root dir: %w", err))
		}
		o.RootDir = d
		if err := o.holdRootDir(); err != nil {
			removeDirs([]string{d})
			return nil, err
		}
		return []string{d}, nil
	}
	if err := checkRootDir(o.RootDir); err != nil {
		return nil, err
	}
	fi, err := os.Stat(o.RootDir)
	if err == nil {
		if !fi.IsDir() {
			return nil, WithCode(ExitEnvironment, fmt.Errorf("--root-dir %s: not a directory", o.RootDir))
		}
		return nil, o.holdRootDir()
	}
	if !os.IsNotExist(err) {
		return nil, WithCode(ExitEnvironment, fmt.Errorf("--root-dir: %w", err))
	}
	if err := o.insideHeldRoot(); err != nil {
		return nil, err
	}
	var missing []string
	for d := o.RootDir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append([]string{d}, missing...)
	}
	for _, d := range missing {
		if err := os.Mkdir(d, 0o750); err != nil {
			removeDirs(created)
			return nil, WithCode(ExitEnvironment, fmt.Errorf("--root-dir: %w", err))
		}
		created = append(created, d)
	}
	if err := o.holdRootDir(); err != nil {
		removeDirs(created)
		return nil, err
	}
	return created, nil
}

// insideHeldRoot refuses, before any directory is made, a root dir inside
// one a live simulator holds (a command that makes nothing there is let
// through).
func (o *CommonOptions) insideHeldRoot() error {
	if o.lockAs == "" {
		return nil
	}
	if held := node.HeldAbove(o.RootDir); len(held) > 0 {
		return WithCode(ExitEnvironment, fmt.Errorf("--root-dir %s lies inside another root dir: %w", o.RootDir, held[0]))
	}
	return nil
}

// holdRootDir resolves the existing root dir to its real path and, for a
// command that makes things there, takes its lock; then refuses an earlier
// run's journal.
func (o *CommonOptions) holdRootDir() error {
	warn := o.warnOut
	if warn == nil {
		warn = os.Stderr
	}
	real, err := resolveRootDir(o.RootDir, warn)
	if err != nil {
		return err
	}
	o.RootDir = real
	if o.lockAs == "" {
		if err := node.CheckRoot(o.RootDir); err != nil {
			return rootErr(err)
		}
		return nil
	}
	o.rootLock, err = lockRootDir(o.RootDir, o.lockAs, warn)
	return err
}

// removeDirs removes directories made by prepareRootDir, deepest first;
// only empty ones go.
func removeDirs(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}

// newRelease builds the one release object of a command from
// --kubelet-version and --feature-gates.
func newRelease(version, gates string) (node.Release, error) {
	if _, err := node.ParseVersion(version); err != nil {
		return node.Release{}, WithCode(ExitUsage, fmt.Errorf("--kubelet-version: %w", err))
	}
	r, err := node.NewRelease(version, gates)
	if err != nil {
		return node.Release{}, WithCode(ExitUsage, fmt.Errorf("--feature-gates: %w", err))
	}
	return r, nil
}

// systemRoots are directories a kubelet root dir can never be: the
// machine's own mount roots and system trees. A run makes directories and
// mounts in its root dir, so these are refused outright; an existing
// directory below them (/var/lib/kubelet) is fine, since a run touches only
// what it made there.
var systemRoots = []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/var/lib", "/var/run", "/var/tmp"}

// checkRootDir refuses the system's own directories as a root dir.
func checkRootDir(dir string) error {
	clean, err := filepath.Abs(dir)
	if err != nil {
		clean = filepath.Clean(dir)
	}
	if r, err := filepath.EvalSymlinks(clean); err == nil {
		clean = r
	}
	for _, s := range systemRoots {
		if clean == s {
			return WithCode(ExitUsage, fmt.Errorf("--root-dir %s: a system directory cannot be a kubelet root dir; use a directory of its own, such as /var/lib/kubelet or a new temp dir", dir))
		}
	}
	for _, s := range []string{"/proc", "/sys", "/dev"} {
		if strings.HasPrefix(clean, s+"/") {
			return WithCode(ExitUsage, fmt.Errorf("--root-dir %s: inside %s, which is the kernel's, not a place for volumes", dir, s))
		}
	}
	return nil
}

// prepare is what every command that talks to a driver does before it
// starts: the options completed and the manifests loaded, the socket
// checked, the root dir made (the directories it made are returned).
func (o *CommonOptions) prepare(ctx context.Context, s Streams, ep csiclient.Endpoint) ([]string, error) {
	if err := o.completeInput(ctx, s, WarnTo(s)); err != nil {
		return nil, err
	}
	if err := ep.Check(); err != nil && !o.Apiserver.Enabled { // --apiserver waits for it
		return nil, WithCode(ExitEnvironment, err)
	}
	o.warnOut = s.Err
	created, err := o.prepareRootDir()
	if err != nil || !o.Apiserver.Enabled {
		return created, err
	}
	if err := o.Apiserver.start(ctx, o, ep, s); err != nil {
		o.rootLock.Release()
		removeDirs(created)
		return nil, err
	}
	return created, nil
}
