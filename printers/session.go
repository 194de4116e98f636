package printers

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	loadreport "github.com/csi-kubelet-sim/csi-kubelet-sim/report"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/sidecars"
)

// Session prints a session of the kubelet (run, plan, load, cleanup): the
// live trace of its calls, its opening and its summary, as text or as one
// JSON object per line. It is the command's session.Observer.
type Session struct {
	notices
	out     io.Writer
	json    bool
	verbose int
	quiet   bool // calls are counted, not printed
	text    *csiclient.TextPrinter
	jsonp   *csiclient.JSONPrinter
}

// NewSession prints to out, and its notices to errOut, -o json when json,
// with -v's verbosity.
func NewSession(out, errOut io.Writer, json bool, verbose int) *Session {
	return &Session{notices: notices{errOut: errOut}, out: out, json: json, verbose: verbose}
}

// NothingToDo: `cleanup` found nothing of the simulator's to finish.
func (p *Session) NothingToDo(n session.NothingToDo) {
	if n.Missing {
		fmt.Fprintf(p.out, "csi-kubelet-sim cleanup: %s does not exist: nothing to do\n", n.RootDir)
		return
	}
	fmt.Fprintf(p.out, "csi-kubelet-sim cleanup: nothing of the simulator's in %s (no journal): nothing to do\n", n.RootDir)
}

// LoadProgress is `load`'s live line of counts.
func (p *Session) LoadProgress() *loadreport.Progress { return p.loadProgress(p.json) }

// Begin makes the printers of the calls, with the run's secrets to keep
// out of them.
func (p *Session) Begin(b session.Begin) session.Printing {
	p.quiet = !b.PrintCalls
	var pr session.Printing
	if p.json {
		p.jsonp = csiclient.NewJSONPrinter(p.out, b.Redactor)
		if b.PrintCalls {
			pr.Calls, pr.Tokens = p.jsonp, p.jsonp
		}
		return pr
	}
	p.text = csiclient.NewTextPrinter(p.out, b.Redactor, b.Verbose, b.Planned)
	if b.PrintCalls {
		pr.Calls = p.text
	}
	return pr
}

// Announce tells the user something about the run before it starts.
func (p *Session) Announce(msg string) {
	if p.jsonp != nil {
		p.jsonp.Object(map[string]any{"kind": "info", "text": msg})
		return
	}
	p.text.Printf("%s\n", msg)
}

// Header is the run's opening lines (text only).
func (p *Session) Header(h session.Header) {
	if p.text == nil {
		return
	}
	root := h.RootDir
	if h.OwnedRoot {
		root += " (temporary, removed afterwards)"
	}
	p.text.Printf("csi-kubelet-sim %s: %s on node %q, root dir %s\n", h.Command, h.Release.Describe(), h.NodeName, root)
	if h.Command != "cleanup" {
		p.text.Printf("  selinux     %s\n", h.SELinuxWhy)
	}
	if !p.quiet {
		p.text.Printf("%s\n", csiclient.TraceHeader())
	}
}

// PersistentVolume shows a provisioned PV: as YAML with -v, as an object
// in JSON.
func (p *Session) PersistentVolume(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) {
	if p.jsonp != nil {
		p.jsonp.Object(map[string]any{"kind": "persistentvolume", "claim": claim.Namespace + "/" + claim.Name, "pv": pv})
		return
	}
	if p.verbose == 0 || p.quiet {
		return
	}
	b, err := yaml.Marshal(pv)
	if err != nil {
		return
	}
	p.text.Printf("      PersistentVolume %s (as the external-provisioner creates it):\n", pv.Name)
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		p.text.Printf("        %s\n", line)
	}
}

// APIServer lists what the driver asked the API server, and what it
// created or changed.
func (p *Session) APIServer(a session.APIServerRequests) {
	if p.jsonp != nil {
		p.jsonp.Object(map[string]any{"kind": "apiserver", "driver_user": a.DriverUser, "driver_identity": a.DriverIdentity,
			"driver_requests": a.Requests, "driver_changed": a.Changed})
		return
	}
	p.text.Printf("API server: the driver (%s) made %d requests", a.DriverUser, len(a.Requests))
	if len(a.Changed) == 0 {
		p.text.Printf(", changed nothing\n")
		return
	}
	p.text.Printf("; it created or changed: %s\n", strings.Join(a.Changed, ", "))
}

// Summary prints what the session did: `load`'s report, or the others'
// summary.
func (p *Session) Summary(s *session.Summary) {
	if s.Load != nil {
		p.loadSummary(s)
		return
	}
	if p.jsonp != nil {
		p.jsonp.Object(jsonSummary(s))
		return
	}
	t := p.text
	out := s.Outcome
	t.Printf("\nsummary\n")
	if r := out.Registration; r != nil {
		t.Printf("  driver      %s %s, node_id %q, CSINode topologyKeys %v, Node labels %v\n", r.DriverName, r.VendorVersion, r.NodeID, r.CSINodeDriver.TopologyKeys, r.NodeLabels)
	}
	for _, r := range out.Results {
		for _, v := range r.Volumes {
			state := "published"
			if v.Err != nil {
				state = "FAILED"
			}
			staged := ""
			if v.StagingPath != "" {
				staged = ", staged"
			}
			t.Printf("  volume      %s/%s %s (%s, %s%s) -> %s\n", podKey(r.Pod), v.PodVolume, state, v.SpecName, v.Mode, staged, v.TargetPath)
		}
		for _, sk := range r.Skipped {
			t.Printf("  skipped     %s/%s: %s\n", podKey(r.Pod), sk.Name, sk.Reason)
		}
	}
	for _, v := range s.Provisioned {
		t.Printf("  provisioned %s -> %s, handle %s: %s\n", v.Claim, v.PV.Name, v.Handle, volumeFate(v))
	}
	p.printRunning(&s.Running, s.SyncFrequency)
	t.Printf("  calls       %d to the driver, %d failed, %s in the driver, %s in all\n", s.Calls, s.FailedCalls, round(s.DriverTime), round(s.Elapsed))
	if out.HoldEnded {
		t.Printf("  hold        ended by Ctrl-C (--hold forever), as it is meant to end\n")
	}
	t.Printf("  left behind %s\n", session.LeftoverText(out.Leftovers))
	if l := out.Leftovers; l != nil && len(l.KubeletPaths) > 0 && l.Clean() {
		t.Printf("  note        a real kubelet also leaves %s (removed here)\n", strings.Join(relPaths(s.RootDir, l.KubeletPaths), ", "))
	}
	// The error itself is printed once, on stderr, as the last line.
	pal := PaletteFor(p.out)
	if s.Exit != nil {
		t.Printf("  result      %s (exit %d: the error is on stderr)\n", pal.Outcome("FAILED"), session.ExitCode(s.Exit))
	} else {
		t.Printf("  result      %s\n", pal.Outcome("OK"))
	}
}

func (p *Session) printRunning(r *node.RunningReport, syncFrequency time.Duration) {
	t := p.text
	switch {
	case r.Republish && r.Syncs == 0:
		t.Printf("  republish   no pod sync came while the pods ran: the first was due %s after the start (--sync-frequency %s with the kubelet's jitter; --republish-period for a fixed one, --hold to run longer)\n", round(r.FirstSync), syncFrequency)
	case r.Republish:
		retried := ""
		if r.RepublishRetried > 0 {
			retried = fmt.Sprintf(", %d succeeded on a retry", r.RepublishRetried)
		}
		t.Printf("  republish   %d pod syncs, %d failures%s\n", r.Syncs, r.RepublishFailed, retried)
	}
	if r.Stats > 0 {
		t.Printf("  stats       %d rounds, %d answers rejected by the kubelet\n", r.Stats, r.StatsFailed)
	}
}

// loadSummary prints the load report: pods, the per-method table, the
// simulator's own cost, what was left and the result.
func (p *Session) loadSummary(s *session.Summary) {
	out := s.Outcome
	if p.jsonp != nil {
		m := jsonSummary(s)
		m["kind"] = "load"
		m["failed_pods"] = out.Failed
		m["load"] = *s.Load
		p.jsonp.Object(m)
		return
	}
	t := p.text
	t.Printf("\nload\n")
	t.Printf("  pods        %d run, %d with a volume that failed\n", out.Pods, out.Failed)
	p.printRunning(&s.Running, s.SyncFrequency)
	t.Printf("  calls       %d to the driver, %d failed, %s in all\n", s.Calls, s.FailedCalls, round(s.Elapsed))
	_ = s.Load.WriteText(p.out)
	t.Printf("  left behind %s\n", session.LeftoverText(out.Leftovers))
	if s.Exit != nil {
		t.Printf("  result      %v\n", s.Exit)
	} else {
		t.Printf("  result      OK\n")
	}
}

// jsonSummary is the session's summary object.
func jsonSummary(s *session.Summary) map[string]any {
	out, running := s.Outcome, &s.Running
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
	vols := []vol{}
	for _, r := range out.Results {
		for _, v := range r.Volumes {
			x := vol{Pod: podKey(r.Pod), Volume: v.PodVolume, SpecName: v.SpecName, Mode: string(v.Mode), TargetPath: v.TargetPath, StagingPath: v.StagingPath, Published: v.Published}
			if v.Err != nil {
				x.Error = v.Err.Error()
			}
			vols = append(vols, x)
		}
	}
	result, code := "OK", session.ExitOK
	if s.Exit != nil {
		result, code = "FAILED", session.ExitCode(s.Exit)
	}
	m := map[string]any{
		"kind": "summary", "result": result, "exit_code": code,
		"kubelet_version": s.Release.Version.String(), "feature_gates": s.Release.Gates.String(),
		"selinux": map[string]any{"enabled": s.SELinux.Enabled, "why": s.SELinux.Why},
		"calls":   s.Calls, "failed_calls": s.FailedCalls,
		"driver_ms": float64(s.DriverTime.Microseconds()) / 1000, "total_ms": float64(s.Elapsed.Microseconds()) / 1000,
		"volumes": vols, "interrupted": out.Interrupted, "hold_ended": out.HoldEnded, "pods": out.Pods,
	}
	if pre := s.Release.PreRelease(); pre != "" {
		m["kubelet_pre_release"] = pre // the rules were checked against this tag only
	}
	if s.HasSidecars {
		prov := []map[string]any{}
		for _, v := range s.Provisioned {
			prov = append(prov, map[string]any{"claim": v.Claim, "pv": v.PV.Name, "handle": v.Handle, "state": volumeFate(v)})
		}
		m["provisioned"] = prov
	}
	if running.Republish {
		m["republish"] = map[string]any{"syncs": running.Syncs, "failed": running.RepublishFailed, "retried": running.RepublishRetried, "first_sync_due_ms": running.FirstSync.Milliseconds()}
	}
	if running.Stats > 0 {
		m["stats"] = map[string]int{"rounds": running.Stats, "rejected": running.StatsFailed}
	}
	if r := out.Registration; r != nil {
		m["registration"] = map[string]any{"driver": r.DriverName, "node_id": r.NodeID, "csinode_driver": r.CSINodeDriver, "node_labels": r.NodeLabels, "node_id_annotation": r.NodeIDAnnotation}
	}
	if l := out.Leftovers; l != nil {
		left := []map[string]string{}
		for _, x := range l.Left {
			left = append(left, map[string]string{"path": x.Path, "what": x.What, "owner": string(x.Owner), "why": x.Why})
		}
		m["left_behind"] = map[string]any{"clean": l.Clean(), "mounts_unmounted": nonNil(l.Mounts), "left": left, "kubelet_paths_removed": nonNil(l.KubeletPaths), "journal": l.Journal}
	}
	if s.Exit != nil {
		m["error"] = s.Exit.Error()
	}
	return m
}

// volumeFate is what became of a provisioned volume.
func volumeFate(v *sidecars.Volume) string {
	switch {
	case v.Deleted:
		return "deleted"
	case v.Kept:
		return "kept"
	case v.Left:
		return "left on the driver"
	}
	return "created"
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// round is a measured duration as every text output prints it.
func round(d time.Duration) string { return csiclient.FormatDuration(d) }

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
