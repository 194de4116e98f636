package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRepublishRetry: the driver (requiresRepublish) fails the early
// republish, its second NodePublishVolume, with InvalidArgument. A kubelet
// leaves the volume mounted with its remount still required, and its
// reconciler mounts it again after the operation's backoff of 500 ms while
// the pod runs, not at the next pod sync (docs/kubelet.md §5). With
// --retry-for the simulator does the same: the retry succeeds and the run
// exits 0, the failed attempt's FailedMount warning still in the trace.
// Without it, the failure ends the run with exit 1 and the trace says a
// kubelet would retry.
func TestRepublishRetry(t *testing.T) {
	staged, err := os.ReadFile(filepath.Join(sample(t, "staged"), "staged.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifests := strings.Replace(string(staged), "  podInfoOnMount: false\n", "  podInfoOnMount: false\n  requiresRepublish: true\n", 1)
	if manifests == string(staged) {
		t.Fatal("the staged sample's CSIDriver changed: no podInfoOnMount line to add requiresRepublish after")
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantPubs []string // the NodePublishVolume answers
	}{
		{"retry-for", []string{"--retry-for", "10s"}, []string{"OK", "InvalidArgument", "OK"}},
		{"no-retries", nil, []string{"OK", "InvalidArgument"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := fltWork(t)
			root := filepath.Join(work, "root")
			drv := fltStartRef(t, work, "--fault", "NodePublishVolume@2=InvalidArgument:1")
			mf := writeFile(t, work, "m.yaml", manifests)
			r := runSim(t, append([]string{"run", "-f", mf, "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--hold", "2s", "--volume-stats-agg-period", "0", "-o", "json"}, tc.args...)...)
			lines := parseTrace(t, r)
			var calls, pubs []string
			for _, l := range lines {
				if l.Kind != "call" || !strings.HasPrefix(l.Method, "Node") || strings.HasPrefix(l.Method, "NodeGet") {
					continue
				}
				calls = append(calls, l.Method)
				if l.Method == "NodePublishVolume" {
					pubs = append(pubs, l.Code)
				}
			}
			wantCalls := []string{"NodeStageVolume"}
			for range tc.wantPubs {
				wantCalls = append(wantCalls, "NodePublishVolume")
			}
			wantCalls = append(wantCalls, "NodeUnpublishVolume", "NodeUnstageVolume")
			if strings.Join(calls, ",") != strings.Join(wantCalls, ",") || strings.Join(pubs, ",") != strings.Join(tc.wantPubs, ",") {
				t.Fatalf("volume calls %v, NodePublishVolume answers %v; want %v, %v\n%s", calls, pubs, wantCalls, tc.wantPubs, r)
			}
			var warned, noted bool
			for _, l := range lines {
				if l.Kind == "step" && l.Level == "warning" && strings.Contains(l.Text, `MountVolume.SetUp failed for volume "pv-data"`) && strings.Contains(l.Text, "InvalidArgument") {
					warned = true
				}
				if l.Kind == "step" && (l.Text == "attempt 1 failed; the kubelet retries after its backoff of 500ms" ||
					strings.HasPrefix(l.Text, "the kubelet retries this remount after its backoff of 500ms")) {
					noted = true
				}
			}
			if !warned || !noted {
				t.Errorf("FailedMount warning %t, backoff note %t; want both\n%s", warned, noted, r)
			}
			var s struct {
				Republish struct{ Syncs, Failed, Retried int } `json:"republish"`
			}
			if err := json.Unmarshal([]byte(summary(t, lines).Raw), &s); err != nil {
				t.Fatal(err)
			}
			if len(tc.wantPubs) == 3 {
				wantCode(t, r, 0)
				if gap := publishGap(t, lines, 1, 2); gap < 500*time.Millisecond {
					t.Errorf("the retry came %v after the failed republish, want the backoff of 500ms", gap)
				}
				if s.Republish.Syncs != 1 || s.Republish.Failed != 0 || s.Republish.Retried != 1 {
					t.Errorf("summary republish %+v, want 1 sync, 0 failed, 1 retried", s.Republish)
				}
			} else {
				wantCode(t, r, 1)
				oneLineError(t, r, `MountVolume.SetUp failed for volume "pv-data"`, "InvalidArgument")
				if s.Republish.Failed != 1 || s.Republish.Retried != 0 {
					t.Errorf("summary republish %+v, want 1 failed, 0 retried", s.Republish)
				}
			}
			assertNothingLeft(t, root, work)
		})
	}
}

// publishGap is the time from the end of the i-th NodePublishVolume call
// of the trace to the start of the j-th (0-based).
func publishGap(tb testing.TB, lines []traceLine, i, j int) time.Duration {
	tb.Helper()
	idx := fltCallIdx(lines, "NodePublishVolume")
	if len(idx) <= j {
		tb.Fatalf("%d NodePublishVolume calls, want %d+", len(idx), j+1)
	}
	a, b := lines[idx[i]], lines[idx[j]]
	return b.Time.Sub(a.Time.Add(time.Duration(a.DurationMS * float64(time.Millisecond))))
}
