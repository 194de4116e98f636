package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

// session is one simulated kubelet's life: register the driver, mount the
// pods' volumes, hold, tear down, clean up, summarise. `run` and `plan`
// differ only in the connection and the hold.
type session struct {
	opts      *commonOptions
	s         streams
	command   string
	planned   bool
	ownedRoot bool
	rootDirs  []string // the root dir and the parents this run made for it
	trace     *csiclient.Trace
	text      *csiclient.TextPrinter
	json      *csiclient.JSONPrinter
	kubelet   *node.Kubelet
	tokens    *tokenSource
	holdErrs  []error // failed republishes and stats while the pods ran
	held      heldReport
	started   time.Time
}

func newSession(command string, o *commonOptions, s streams, conn grpc.ClientConnInterface, planned bool, rootDirs []string) *session {
	ss := &session{opts: o, s: s, command: command, planned: planned, ownedRoot: len(rootDirs) > 0, rootDirs: rootDirs, started: time.Now()}
	red := csiclient.Redactor{ShowSecrets: o.ShowSecrets}
	ss.trace = csiclient.NewTrace()
	if o.Output == "json" {
		ss.json = csiclient.NewJSONPrinter(s.Out, red)
		ss.trace.AddSink(ss.json)
	} else {
		ss.text = csiclient.NewTextPrinter(s.Out, red, o.Verbose > 0, planned)
		ss.trace.AddSink(ss.text)
	}
	ss.kubelet = node.New(node.Config{
		RootDir:  o.RootDir,
		NodeName: o.NodeName,
		Timeout:  o.Timeout,
		Version:  o.version,
		Gates:    o.gates,
		SELinux:  node.SELinux{Enabled: o.SELinux, Level: o.SELinuxLevel},
		DryRun:   planned,
		Retry:    node.Retry{MaxAttempts: o.MaxAttempts, For: o.RetryFor},
	}, o.cluster, conn, ss.trace)
	ss.tokens = o.newTokenSource(o.cluster, o.gates, func(msg string) {
		ss.trace.Warn(context.Background(), "API server: "+msg)
	})
	ss.kubelet.SetTokenIssuer(ss.tokens)
	return ss
}

// outcome collects what decides the exit code.
type outcome struct {
	registration *node.Registration
	results      []*node.PodResult
	mountErr     error // a pod's volumes could not be resolved
	teardownErrs []error
	leftovers    *node.Leftovers
	interrupted  bool
	regErr       error
}

// announce tells the user something about the run before it starts.
func (ss *session) announce(msg string) {
	if ss.json != nil {
		ss.json.Object(map[string]any{"kind": "info", "text": msg})
		return
	}
	ss.text.Printf("%s\n", msg)
}

func (ss *session) header() {
	if ss.text == nil {
		return
	}
	root := ss.opts.RootDir
	if ss.ownedRoot {
		root += " (temporary, removed afterwards)"
	}
	ss.text.Printf("csi-kubelet-sim %s: kubelet %s on node %q, root dir %s\n", ss.command, ss.opts.version, ss.opts.NodeName, root)
	ss.text.Printf("  # component operation      method                result   time     detail\n")
}

// lifecycle runs the whole session; hold is called between mount and
// teardown and returns early when ctx is cancelled.
func (ss *session) lifecycle(ctx context.Context, hold func(context.Context)) *outcome {
	ss.header()
	out := &outcome{}
	k := ss.kubelet
	reg, err := k.Register(ctx)
	out.registration, out.regErr = reg, err
	if err == nil {
		ss.warnNameMismatch(ctx, reg.DriverName)
		out.mountErr = ss.mountAll(ctx, reg.DriverName, out)
		if out.mountErr == nil && !failed(out.results) && ctx.Err() == nil {
			hold(ctx)
		}
	}
	out.interrupted = ctx.Err() != nil
	// Teardown must run even after Ctrl-C: it gets a context of its own.
	tctx := context.WithoutCancel(ctx)
	pods := ss.opts.cluster.Pods()
	for i := len(pods) - 1; i >= 0; i-- {
		out.teardownErrs = append(out.teardownErrs, k.UnmountPod(tctx, pods[i])...)
	}
	out.leftovers = k.Cleanup(tctx, ss.ownedRoot)
	removeDirs(ss.rootDirs)
	return out
}

// warnNameMismatch says what a name mismatch does: the kubelet looks the
// CSIDriver object and the driver up by the name each volume gives, and
// knows the driver only by the name it registered.
func (ss *session) warnNameMismatch(ctx context.Context, registered string) {
	lctx := csiclient.WithLabels(ctx, csiclient.Labels{Component: "kubelet", Operation: "RegisterPlugin"})
	if _, ok := ss.opts.cluster.CSIDriver(registered); ok {
		return
	}
	for _, d := range ss.opts.cluster.CSIDrivers() {
		if d.Name != registered {
			ss.trace.Warn(lctx, fmt.Sprintf("CSIDriver %q does not match the registered driver %q: the kubelet treats it as another driver's object, and volumes of %q get no CSIDriver behaviour (attach required, no pod info)", d.Name, registered, registered))
		}
	}
}

func (ss *session) mountAll(ctx context.Context, driver string, out *outcome) error {
	if err := ss.opts.defaultPod(driver); err != nil {
		return err
	}
	for _, pod := range ss.opts.cluster.Pods() {
		if pod.Spec.NodeName == "" {
			pod.Spec.NodeName = ss.opts.NodeName
		}
		if ctx.Err() != nil {
			return nil
		}
		res, err := ss.kubelet.MountPod(ctx, pod)
		if err != nil {
			return withCode(exitUsage, err)
		}
		out.results = append(out.results, res)
	}
	return nil
}

func failed(results []*node.PodResult) bool {
	for _, r := range results {
		if r.Failed() {
			return true
		}
	}
	return false
}

// exitErr turns the outcome into the command's error and exit code.
func (ss *session) exitErr(out *outcome) error {
	calls := ss.trace.Calls()
	if out.regErr != nil {
		return registrationExit(out.regErr)
	}
	if out.interrupted {
		return withCode(exitInterrupted, errors.New("interrupted; volumes were unpublished and unstaged"))
	}
	if out.mountErr != nil {
		return out.mountErr
	}
	// A call that failed but whose operation later succeeded on a retry
	// is not a failure of the run: the kubelet got there.
	driverFailed := false
	for _, c := range calls {
		driverFailed = driverFailed || c.Err != nil
	}
	var volErrs []string
	for _, r := range out.results {
		for _, v := range r.Volumes {
			if v.Err != nil {
				volErrs = append(volErrs, v.Err.Error())
			}
		}
	}
	var later []string
	for _, e := range append(ss.holdErrs, out.teardownErrs...) {
		later = append(later, e.Error())
	}
	// A driver that never answered: the kubelet's event says only
	// DeadlineExceeded, so say which call and which timeout.
	for _, c := range calls {
		if c.TimedOut && len(volErrs) > 0 {
			volErrs[0] += fmt.Sprintf(" (%s did not answer within --timeout %s)", c.Method, ss.opts.Timeout)
			break
		}
	}
	switch {
	case len(volErrs) > 0 && driverFailed:
		return withCode(exitFailed, errors.New(volErrs[0]))
	case len(volErrs) > 0:
		return withCode(exitUsage, errors.New(volErrs[0]))
	case len(later) > 0:
		return withCode(exitFailed, errors.New(later[0]))
	case !out.leftovers.Clean():
		return withCode(exitFailed, fmt.Errorf("the driver left things behind: %s", strings.Join(append(out.leftovers.Mounts, out.leftovers.DriverPaths...), ", ")))
	}
	return nil
}

// registrationExit: a driver that cannot be reached is the environment;
// one that answers with an error failed.
func registrationExit(err error) error {
	switch status.Code(errors.Unwrap(err)) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return withCode(exitEnvironment, fmt.Errorf("%w (is the driver running and answering on the socket?)", err))
	}
	var re *node.RegistrationError
	if errors.As(err, &re) {
		if st, ok := status.FromError(re.Err); ok && (st.Code() == codes.Unavailable || st.Code() == codes.DeadlineExceeded) {
			return withCode(exitEnvironment, fmt.Errorf("%w (is the driver running and answering on the socket?)", err))
		}
	}
	return withCode(exitFailed, err)
}

// summary prints what the session did.
func (ss *session) summary(out *outcome, exit error) {
	calls := ss.trace.Calls()
	failedCalls := 0
	var driverTime time.Duration
	for _, c := range calls {
		if c.Err != nil {
			failedCalls++
		}
		driverTime += c.Duration
	}
	if ss.json != nil {
		m := jsonSummary(out, calls, failedCalls, driverTime, time.Since(ss.started), exit)
		if h := ss.held; h.republish {
			m["republish"] = map[string]int{"syncs": h.syncs, "failed": h.republishFailed}
		}
		if h := ss.held; h.stats > 0 {
			m["stats"] = map[string]int{"rounds": h.stats, "rejected": h.statsFailed}
		}
		ss.json.Object(m)
		return
	}
	p := ss.text
	p.Printf("\nsummary\n")
	if r := out.registration; r != nil {
		p.Printf("  driver      %s %s, node_id %q, CSINode topologyKeys %v, Node labels %v\n", r.DriverName, r.VendorVersion, r.NodeID, r.CSINodeDriver.TopologyKeys, r.NodeLabels)
	}
	for _, r := range out.results {
		for _, v := range r.Volumes {
			state := "published"
			if v.Err != nil {
				state = "FAILED"
			}
			staged := ""
			if v.StagingPath != "" {
				staged = ", staged"
			}
			p.Printf("  volume      %s/%s %s (%s, %s%s) -> %s\n", podKey(r.Pod), v.PodVolume, state, v.SpecName, v.Mode, staged, v.TargetPath)
		}
		for _, sk := range r.Skipped {
			p.Printf("  skipped     %s/%s: %s\n", podKey(r.Pod), sk.Name, sk.Reason)
		}
	}
	if h := ss.held; h.republish {
		p.Printf("  republish   %d pod syncs, %d failures\n", h.syncs, h.republishFailed)
	}
	if h := ss.held; h.stats > 0 {
		p.Printf("  stats       %d rounds, %d answers rejected by the kubelet\n", h.stats, h.statsFailed)
	}
	p.Printf("  calls       %d to the driver, %d failed, %s in the driver, %s in all\n", len(calls), failedCalls, round(driverTime), round(time.Since(ss.started)))
	p.Printf("  left behind %s\n", leftoverText(out.leftovers))
	if out.leftovers != nil && len(out.leftovers.KubeletPaths) > 0 {
		p.Printf("  note        a real kubelet also leaves %s (removed here)\n", strings.Join(relPaths(ss.opts.RootDir, out.leftovers.KubeletPaths), ", "))
	}
	if exit != nil {
		p.Printf("  result      %v\n", exit)
	} else {
		p.Printf("  result      OK\n")
	}
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func round(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }

func leftoverText(l *node.Leftovers) string {
	if l == nil || l.Clean() {
		return "nothing"
	}
	var parts []string
	for _, m := range l.Mounts {
		parts = append(parts, "mount "+m)
	}
	for _, p := range l.DriverPaths {
		parts = append(parts, "path "+p)
	}
	for _, e := range l.Errors {
		parts = append(parts, "error "+e.Error())
	}
	return strings.Join(parts, "; ") + " (all undone by the simulator)"
}

func relPaths(root string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if r, err := filepath.Rel(root, p); err == nil {
			out[i] = "<root>/" + r
		} else {
			out[i] = p
		}
	}
	return out
}

func jsonSummary(out *outcome, calls []csiclient.Call, failedCalls int, driverTime, total time.Duration, exit error) map[string]any {
	type vol struct {
		Pod         string `json:"pod"`
		Volume      string `json:"volume"`
		SpecName    string `json:"spec_name"`
		Mode        string `json:"mode"`
		TargetPath  string `json:"target_path"`
		StagingPath string `json:"staging_target_path,omitempty"`
		Published   bool   `json:"published"`
		Error       string `json:"error,omitempty"`
	}
	var vols []vol
	for _, r := range out.results {
		for _, v := range r.Volumes {
			x := vol{Pod: podKey(r.Pod), Volume: v.PodVolume, SpecName: v.SpecName, Mode: string(v.Mode), TargetPath: v.TargetPath, StagingPath: v.StagingPath, Published: v.Published}
			if v.Err != nil {
				x.Error = v.Err.Error()
			}
			vols = append(vols, x)
		}
	}
	m := map[string]any{
		"kind": "summary", "calls": len(calls), "failed_calls": failedCalls,
		"driver_ms": float64(driverTime.Microseconds()) / 1000, "total_ms": float64(total.Microseconds()) / 1000,
		"volumes": vols, "interrupted": out.interrupted,
	}
	if r := out.registration; r != nil {
		m["registration"] = map[string]any{"driver": r.DriverName, "node_id": r.NodeID, "csinode_driver": r.CSINodeDriver, "node_labels": r.NodeLabels, "node_id_annotation": r.NodeIDAnnotation}
	}
	if l := out.leftovers; l != nil {
		m["left_behind"] = map[string]any{"mounts": l.Mounts, "driver_paths": l.DriverPaths, "kubelet_paths": l.KubeletPaths}
	}
	if exit != nil {
		m["error"] = exit.Error()
	}
	return m
}
