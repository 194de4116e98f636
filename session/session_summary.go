package session

// What a session prints once the kubelet is done: what was left, the JSON
// summary.

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
)

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

func leftoverText(l *node.Leftovers) string {
	if l == nil || l.Clean() {
		return "nothing"
	}
	return leftoverList(l)
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

func (ss *session) jsonSummary(out *node.Outcome, running *node.RunningReport, calls, failedCalls int, driverTime time.Duration, exit error) map[string]any {
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
	result, code := "OK", ExitOK
	if exit != nil {
		result, code = "FAILED", ExitCode(exit)
	}
	m := map[string]any{
		"kind": "summary", "result": result, "exit_code": code,
		"kubelet_version": ss.opts.release.Version.String(), "feature_gates": ss.opts.release.Gates.String(),
		"selinux": map[string]any{"enabled": ss.opts.selinux.Enabled, "why": ss.opts.selinux.Why},
		"calls":   calls, "failed_calls": failedCalls,
		"driver_ms": float64(driverTime.Microseconds()) / 1000, "total_ms": float64(time.Since(ss.started).Microseconds()) / 1000,
		"volumes": vols, "interrupted": out.Interrupted, "hold_ended": out.HoldEnded, "pods": out.Pods,
	}
	if p := ss.opts.release.PreRelease(); p != "" {
		m["kubelet_pre_release"] = p // the rules were checked against this tag only
	}
	if ss.sidecars != nil {
		m["provisioned"] = ss.jsonProvisioned()
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
	if exit != nil {
		m["error"] = exit.Error()
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
