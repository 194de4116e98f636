package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/manifests"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/rootdirs"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/tokens"
)

// session is the printing side of one simulated kubelet's life: it builds
// the kubelet, hands it the command's plan (node.Kubelet.Run owns the
// lifecycle), and turns the outcome into a summary and an exit code.
type session struct {
	opts      *CommonOptions
	s         Streams
	command   string
	planned   bool
	ownedRoot bool
	rootDirs  []string // the root dir and the parents this run made for it
	endpoint  string   // for the `cleanup` hint
	conn      grpc.ClientConnInterface
	trace     *csiclient.Trace
	tally     *tally
	quiet     bool // calls are counted, not printed
	obs       Observer
	// tokenRecords takes a record of each token handed out (-o json).
	tokenRecords interface{ Object(any) }
	kubelet      *node.Kubelet
	tokens       *node.TokenSource
	started      time.Time
	sidecars     *sidecars.Controllers // provisioning and attach, when the command has them
	red          csiclient.Redactor    // with the run's secrets, for every output
}

func newSession(command string, o *CommonOptions, s Streams, conn grpc.ClientConnInterface, planned bool, rootDirs []string) *session {
	return buildSession(command, o, s, conn, planned, rootDirs, true)
}

// newQuietSession is a session whose calls are counted but printed only
// with printCalls (`load`: a hundred pods' calls are a report, not a story).
func newQuietSession(command string, o *CommonOptions, s Streams, conn grpc.ClientConnInterface, rootDirs []string, printCalls bool) *session {
	return buildSession(command, o, s, conn, false, rootDirs, printCalls)
}

func buildSession(command string, o *CommonOptions, s Streams, conn grpc.ClientConnInterface, planned bool, rootDirs []string, printCalls bool) *session {
	ss := &session{opts: o, s: s, command: command, planned: planned, ownedRoot: len(rootDirs) > 0, rootDirs: rootDirs, started: time.Now(), quiet: !printCalls, conn: conn}
	// The secrets the run hands the driver are collected first, so that
	// every printer can keep them out of the driver's own text.
	red := csiclient.Redactor{ShowSecrets: o.ShowSecrets, Sensitive: inputSecrets(o.cluster)}
	ss.red = red
	// Nothing keeps the calls: the printers and counters see each as it
	// happens, so a long hold or a load takes constant memory.
	ss.trace = csiclient.NewStreamingTrace(red.Sensitive)
	ss.tally = &tally{}
	ss.trace.AddSink(ss.tally)
	ss.obs = o.Printer
	if ss.obs == nil {
		ss.obs = noObserver{}
	}
	pr := ss.obs.Begin(Begin{Redactor: red, Planned: planned, PrintCalls: printCalls, Verbose: o.Verbose > 0})
	if pr.Calls != nil {
		ss.trace.AddSink(pr.Calls)
	}
	ss.tokenRecords = pr.Tokens
	for _, obs := range o.Observers {
		ss.trace.AddSink(obs)
	}
	ss.tokens = o.newTokenSource(o.cluster, o.Release, o.NodeName, func(msg string) {
		ss.trace.Warn(context.Background(), "API server: "+msg)
	})
	ss.kubelet = node.New(node.Config{
		RootDir:  o.RootDir,
		NodeName: o.NodeName,
		Timeout:  o.Timeout,
		Release:  o.Release,
		SELinux:  node.SELinux{Enabled: o.selinux.Enabled, Level: o.SELinuxLevel},
		DryRun:   planned,
		Retry:    node.Retry{MaxAttempts: o.MaxAttempts, For: o.RetryFor},
		Cluster:  o.cluster,
		Conn:     conn,
		Trace:    ss.trace,
		Tokens:   ss.tokenIssuer(),
		Command:  command,
		Adopted:  rootDirs,
		Force:    o.Force,
		RootLock: o.rootLock,
	})
	return ss
}

// announce tells the user something about the run before it starts.
func (ss *session) announce(msg string) { ss.obs.Announce(msg) }

// header opens the session for the observer.
func (ss *session) header() {
	ss.obs.Header(Header{
		Command: ss.command, Release: ss.opts.Release, NodeName: ss.opts.NodeName,
		RootDir: ss.opts.RootDir, OwnedRoot: ss.ownedRoot, SELinuxWhy: ss.opts.selinux.Why,
		PrintCalls: !ss.quiet,
	})
}

// plan is the command's schedule for the kubelet.
func (ss *session) plan(ctx context.Context, hold time.Duration, running node.RunningSchedule) node.Plan {
	return node.Plan{
		DefaultPod: &manifests.DefaultPod{UID: types.UID(ss.opts.PodUID), VolumeHandle: ss.opts.VolumeHandle},
		Hold:       hold,
		Running:    running,
		Teardown:   teardownContext(ctx),
		AdmitDefaultPod: func(pod *corev1.Pod) error {
			return ss.opts.Admission.Admit(ctx, ss.opts.cluster, []any{pod}, ss.opts.Release.APIServerDefaults(), ss.opts.Verbose, ss.s.Err)
		},
	}
}

// lifecycle runs the kubelet for the plan and removes the root dir it made.
func (ss *session) lifecycle(ctx context.Context, plan node.Plan) *node.Outcome {
	if ss.opts.defaultPod != "" {
		ss.announce(ss.opts.defaultPod)
	}
	ss.header()
	out := ss.kubelet.Run(ctx, plan)
	if out.Leftovers.NothingOnDisk() {
		rootdirs.Remove(ss.rootDirs)
	}
	return out
}

// exitErr turns the outcome into the command's error and exit code. Its
// message, which can quote the driver, is scrubbed of the run's secrets.
func (ss *session) exitErr(out *node.Outcome) (err error) {
	defer func() {
		if err != nil {
			if msg := err.Error(); ss.red.Scrub(msg) != msg {
				err = WithCode(ExitCode(err), errors.New(ss.red.Scrub(msg)))
			}
		}
	}()
	_, failedCalls, _, timedOut := ss.tally.counts()
	// Interrupted first: a call cut short by Ctrl-C fails, and that is
	// not the driver's doing.
	if out.Abandoned || out.Interrupted && !out.HoldEnded {
		return WithCode(ExitInterrupted, errors.New(ss.interruptedText(out)))
	}
	if out.RegErr != nil {
		return registrationExit(out.RegErr)
	}
	if out.ControllerErr != nil {
		return controllerExit(out.ControllerErr)
	}
	if err := ss.symlinkRefused(out); err != nil {
		return WithCode(ExitUsage, err)
	}
	if out.MountErr != nil {
		if node.IsInTheWay(out.MountErr) || exitcode.IsEnvironment(out.MountErr) {
			return WithCode(ExitEnvironment, out.MountErr)
		}
		return WithCode(ExitUsage, out.MountErr)
	}
	volErr := out.FirstVolumeError()
	if volErr != nil && (node.IsInTheWay(volErr) || exitcode.IsEnvironment(volErr)) {
		return WithCode(ExitEnvironment, volErr)
	}
	// A call that failed but whose operation later succeeded on a retry
	// is not a failure of the run: the kubelet got there.
	driverFailed := failedCalls > 0
	running := out.Running.Snapshot()
	later := append(runningErrs(out, running.Errs), out.TeardownErrs...)
	if volErr != nil {
		msg := volErr.Error()
		// A driver that never answered: the kubelet's event says only
		// DeadlineExceeded, so say which call and which timeout.
		if timedOut != "" {
			msg += fmt.Sprintf(" (%s did not answer within --timeout %s)", timedOut, ss.opts.Timeout)
		}
		msg += notFoundHint(out) + ss.attachHint(out)
		if driverFailed {
			return WithCode(ExitFailed, errors.New(msg+ss.cleanupHint(out)))
		}
		return WithCode(ExitUsage, errors.New(msg))
	}
	if out.Pods > 0 && !ss.exercisedVolume(out) {
		return WithCode(ExitUsage, errors.New("no CSI volume of the driver was mounted: the pods have no CSI volume that a container uses (see `skipped` above); nothing of the driver was exercised"))
	}
	switch {
	case len(later) > 0:
		return WithCode(ExitFailed, fmt.Errorf("%v%s", later[0], ss.cleanupHint(out)))
	case !out.Leftovers.Clean():
		return WithCode(ExitFailed, fmt.Errorf("left behind: %s%s", leftoverList(out.Leftovers), ss.cleanupHint(out)))
	}
	return nil
}

// exercisedVolume tells whether any CSI volume reached the driver.
func (ss *session) exercisedVolume(out *node.Outcome) bool {
	for _, r := range out.Results {
		if len(r.Volumes) > 0 {
			return true
		}
	}
	return len(out.Results) == 0
}

// cleanupHint is the command that finishes what a run left of its own.
func (ss *session) cleanupHint(out *node.Outcome) string {
	if out.Leftovers == nil || (out.Leftovers.Journal == "" && !out.Leftovers.KeptForCleanup()) {
		return ""
	}
	ep := ss.endpoint
	if ep == "" {
		ep = "<the driver's socket>"
	}
	return fmt.Sprintf("; finish with: csi-kubelet-sim cleanup --root-dir %s --endpoint %s", ss.opts.RootDir, ep)
}

// registrationExit: nothing listening on the socket, or no answer in
// time, is the environment; a driver that answered with an error (even
// Unavailable: it is running) failed, and its own code and message say
// why.
func registrationExit(err error) error {
	step := "registration"
	var re *node.RegistrationError
	if errors.As(err, &re) {
		step = re.Step
	}
	switch csiclient.Classify(err) {
	case csiclient.NotListening, csiclient.NoAnswer:
		return WithCode(ExitEnvironment, fmt.Errorf("%s: %s", step, csiclient.Explain(err)))
	}
	if _, ok := csiclient.DriverStatus(err); !ok {
		return WithCode(ExitFailed, fmt.Errorf("%w (the driver answered registration with an error)", err))
	}
	return WithCode(ExitFailed, fmt.Errorf("%s: %s (the driver answered registration with an error)", step, csiclient.Explain(err)))
}

// summary hands the observer what the session did.
func (ss *session) summary(out *node.Outcome, exit error) {
	ss.obs.Summary(ss.summaryOf(out, exit))
}

// summaryOf is what the session did, as data.
func (ss *session) summaryOf(out *node.Outcome, exit error) *Summary {
	calls, failedCalls, driverTime, _ := ss.tally.counts()
	s := &Summary{
		Command: ss.command, Outcome: out, Running: out.Running.Snapshot(),
		Calls: calls, FailedCalls: failedCalls, DriverTime: driverTime, Elapsed: time.Since(ss.started),
		Release: ss.opts.Release, SELinux: ss.opts.selinux, RootDir: ss.opts.RootDir,
		SyncFrequency: ss.opts.syncFrequency, Exit: exit, HasSidecars: ss.sidecars != nil,
	}
	if ss.sidecars != nil {
		s.Provisioned = ss.sidecars.Volumes()
	}
	return s
}

// inputSecrets is the set of sensitive values with the input's Secrets
// already in it: the driver answers GetPluginInfo and NodeGetInfo before
// any request carries a secret, and its vendor_version or node_id must not
// print one either. The requests' own secrets join as they are made.
func inputSecrets(c *manifests.Cluster) *csiclient.Sensitive {
	s := csiclient.NewSensitive()
	if c == nil {
		return s
	}
	for _, obj := range c.Objects() {
		if sec, ok := obj.(*corev1.Secret); ok {
			for _, v := range sec.Data {
				s.Add(string(v))
			}
			for _, v := range sec.StringData {
				s.Add(v)
			}
		}
	}
	return s
}

// runningErrs are the failures while the pods ran that count: when the
// interrupt ended a run held forever, a call it cut short (a republish
// in flight) failed because of it, not of the driver.
func runningErrs(out *node.Outcome, errs []error) []error {
	if !out.HoldEnded {
		return errs
	}
	var kept []error
	for _, err := range errs {
		if !errors.Is(err, context.Canceled) && grpcCode(err) != codes.Canceled {
			kept = append(kept, err)
		}
	}
	return kept
}

// tally counts the calls of a run as they happen, so that the summary and
// the exit code need no kept trace: a long hold or a load keeps constant
// memory.
type tally struct {
	mu         sync.Mutex
	calls      int
	failed     int
	driverTime time.Duration
	timedOut   string // the first call the operation's timeout cut off
	// controllerPublishes: a ControllerGetCapabilities answer of the run
	// (the sidecars asked it) had PUBLISH_UNPUBLISH_VOLUME.
	controllerPublishes bool
}

func (t *tally) Call(c csiclient.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	t.driverTime += c.Duration
	if c.Err != nil {
		t.failed++
	}
	if c.TimedOut && t.timedOut == "" {
		t.timedOut = c.Method
	}
	if resp, ok := c.Response.(*csi.ControllerGetCapabilitiesResponse); ok {
		for _, cp := range resp.GetCapabilities() {
			if cp.GetRpc().GetType() == csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME {
				t.controllerPublishes = true
			}
		}
	}
}

// publishes says whether the run saw the driver's controller offer
// PUBLISH_UNPUBLISH_VOLUME.
func (t *tally) publishes() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.controllerPublishes
}

func (t *tally) Step(csiclient.Step) {}

// counts returns a consistent copy.
func (t *tally) counts() (calls, failed int, driverTime time.Duration, timedOut string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls, t.failed, t.driverTime, t.timedOut
}

func leftoverList(l *node.Leftovers) string {
	if l == nil {
		return "nothing"
	}
	var parts []string
	for _, m := range l.Mounts {
		parts = append(parts, "mount "+m+" (the driver's, left after it answered OK; unmounted by the simulator)")
	}
	for _, x := range l.Left {
		parts = append(parts, x.String())
	}
	for _, e := range l.Errors {
		parts = append(parts, "error "+e.Error())
	}
	return strings.Join(parts, "; ")
}

// LeftoverText is what a session left, for people.
func LeftoverText(l *node.Leftovers) string {
	if l == nil || l.Clean() {
		return "nothing"
	}
	return leftoverList(l)
}

// tokenIssuer is the token source the session's kubelet uses: with
// -o json, one that writes a record of each token handed out.
func (ss *session) tokenIssuer() node.TokenIssuer {
	if ss.tokenRecords == nil {
		return ss.tokens
	}
	return tokens.Recorder{Next: ss.tokens, Out: ss.tokenRecords}
}
