package callcompare

import (
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/e2e/kubeletdiff/recorder"
)

func publish(target, tokens string) recorder.Call {
	return recorder.Call{Method: "/csi.v1.Node/NodePublishVolume", Request: map[string]any{
		"target_path":    target,
		"volume_context": map[string]any{TokensKey: tokens},
	}}
}

// Two sides with their own root dirs and tokens, the same otherwise,
// compare equal; a token of another shape does not.
func TestNormalize(t *testing.T) {
	kubelet := publish("/var/lib/kubelet/pods/u/volumes/v/mount",
		`{"":{"token":"aaa.bbb.ccc","expirationTimestamp":"2026-11-27T17:00:00Z"}}`)
	sim := publish("/tmp/sim/root/pods/u/volumes/v/mount",
		`{"":{"token":"ddd.eee.fff","expirationTimestamp":"2026-11-27T18:30:00Z"}}`)
	k, s := Normalize(kubelet, "/var/lib/kubelet"), Normalize(sim, "/tmp/sim/root")
	if k != s {
		t.Fatalf("normalized calls differ:\n%s\n%s", k, s)
	}
	if !strings.Contains(k, `<root>/pods/u`) || !strings.Contains(k, `<JWT>`) || !strings.Contains(k, `<RFC3339>`) {
		t.Errorf("not normalized: %s", k)
	}
	if kubelet.Request["target_path"] != "/var/lib/kubelet/pods/u/volumes/v/mount" {
		t.Errorf("Normalize changed the call it was given: %v", kubelet.Request)
	}
	odd := Normalize(publish("/tmp/sim/root/pods/u/volumes/v/mount", `{"":{"token":"not-a-jwt","expirationTimestamp":"2026-11-27T18:30:00Z"}}`), "/tmp/sim/root")
	if odd == k {
		t.Errorf("a token that is no JWT compares equal to one: %s", odd)
	}
}

// Diff names the kubelet side, and the fields of a replaced call.
func TestDiff(t *testing.T) {
	a := NormalizeAll([]recorder.Call{publish("/r/a", "{}")}, "")
	b := NormalizeAll([]recorder.Call{publish("/r/b", "{}")}, "")
	d := Diff("whole kubelet", a, b)
	for _, want := range []string{"whole kubelet: 1 calls, csi-kubelet-sim: 1 calls", "- kubelet", "+ sim", `request.target_path: kubelet "/r/a", sim "/r/b"`} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
}

func TestStuckError(t *testing.T) {
	klog := `E1127 18:00:00.000000 1 nestedpendingoperations.go:348] Operation for "{volumeName:kubernetes.io/csi/ref^vol podName:uid}" failed. No retries permitted until ... (durationBeforeRetry 500ms). Error: UnmapVolume.UnmapBlockVolume failed for volume "pv-vol" (UniqueName: "kubernetes.io/csi/ref^vol") pod "uid" (UID: "uid") : blkUtil.DetachFileDevice failed. globalUnmapPath:/x, podUID: uid, bindMount: true: failed to unmap`
	sim := "csi-kubelet-sim: UnmapVolume.UnmapBlockVolume failed for volume \"pv-vol\" : blkUtil.DetachFileDevice failed. globalUnmapPath:/x, podUID: uid, bindMount: true: failed to unmap\n"
	k, s := StuckError("UnmapVolume.UnmapBlockVolume failed", klog), StuckError("UnmapVolume.UnmapBlockVolume failed", sim)
	if k == "" || k != s {
		t.Errorf("kubelet %q, sim %q: want the same, non-empty", k, s)
	}
	if got := StuckError("UnmountVolume.NewUnmounter failed", klog); got != "" {
		t.Errorf("another operation's error: %q, want none", got)
	}
}
