package e2e

// The kubelet's error semantics (docs/kubelet.md §12) against the reference
// driver's injected faults (--fault): which calls follow a failed
// NodeStageVolume or NodePublishVolume, which directories the kubelet keeps
// or removes (docs/kubelet.md §1.7), retries with the kubelet's backoff, a call
// that hangs past the operation's timeout, and a driver that crashes
// mid-call.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/internal/loopdev"
)

// ---------------------------------------------------------------------------
// Helpers shared by the three files of this change (semantics, block,
// conformance faults).

// fltLoopsUnder lists the loop devices whose backing file is under dir,
// as "loopN: <backing file>", from /sys/block/loop*/loop/backing_file.
func fltLoopsUnder(dir string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		backing := strings.TrimSpace(string(b))
		if backing == dir || strings.HasPrefix(backing, dir+"/") {
			out = append(out, filepath.Base(filepath.Dir(filepath.Dir(f)))+": "+backing)
		}
	}
	return out
}

// fltDetachLoops detaches the loop devices backed by files under dir; for
// test clean-up after a failure. Each is checked on its own descriptor and
// cleared through it (loopdev): a number listed earlier may be another
// process's by now.
func fltDetachLoops(dir string) {
	under := func(backing string) bool { return backing == dir || strings.HasPrefix(backing, dir+"/") }
	_, _ = loopdev.DetachMatching(under, func(s loopdev.Status) bool {
		return under(strings.TrimSuffix(s.BackingPath, " (deleted)"))
	}, loopdev.DetachOptions{Tries: 50, Wait: 20 * time.Millisecond})
}

// fltAssertClean is assertNothingLeft plus: no loop device backed by a file
// under the test's work dir (neither the driver's nor the kubelet's lock).
func fltAssertClean(tb testing.TB, root, work string) {
	tb.Helper()
	assertNothingLeft(tb, root, work)
	if ls := fltLoopsUnder(work); len(ls) > 0 {
		tb.Errorf("loop devices left with a backing file under %s: %v", work, ls)
	}
}

// fltWork makes a work dir whose clean-up, besides workDir's (unmount
// everything, remove), detaches loop devices backed under it first.
func fltWork(tb testing.TB) string {
	tb.Helper()
	work := workDir(tb)
	tb.Cleanup(func() { fltDetachLoops(work) }) // runs before workDir's clean-up
	return work
}

// fltStartRef starts the reference driver with extra flags (faults), and
// on clean-up, after it is stopped, removes a socket a crashed driver left
// and unmounts whatever it left under its data dir.
func fltStartRef(tb testing.TB, work string, args ...string) *driverProc {
	tb.Helper()
	tb.Cleanup(func() {
		_ = os.Remove(filepath.Join(work, "ref.sock"))
		if left := unmountAll(filepath.Join(work, "refdata")); len(left) > 0 {
			tb.Errorf("cleanup: still mounted under the driver's data dir: %v", left)
		}
	})
	return startRefDriver(tb, work, args...) // its Stop runs before the clean-up above
}

// fltWaitLog polls a log file until it contains s.
func fltWaitLog(tb testing.TB, file, s string, timeout time.Duration, exited <-chan struct{}) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(readFile(file), s) {
		select {
		case <-exited:
			tb.Fatalf("exited before %s said %q; it says:\n%s", file, s, readFile(file))
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s does not say %q after %v; it says:\n%s", file, s, timeout, readFile(file))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fltExists reports whether p exists (without following a final symlink).
func fltExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// fltRemovals returns the kubelet's "removed <path>" steps (-v) in lines.
func fltRemovals(lines []traceLine) []string {
	var out []string
	for _, l := range lines {
		if l.Kind == "step" && l.Component == "kubelet" && strings.HasPrefix(l.Text, "removed ") {
			out = append(out, strings.TrimPrefix(l.Text, "removed "))
		}
	}
	return out
}

// fltCallIdx returns the indexes in lines of the calls of method.
func fltCallIdx(lines []traceLine, method string) []int {
	var out []int
	for i, l := range lines {
		if l.Kind == "call" && l.Method == method {
			out = append(out, i)
		}
	}
	return out
}

// fltNextCall returns the index of the first call after i, or len(lines).
func fltNextCall(lines []traceLine, i int) int {
	for j := i + 1; j < len(lines); j++ {
		if lines[j].Kind == "call" {
			return j
		}
	}
	return len(lines)
}

// fltCallNames renders calls as Method, or Method(ASKING) for capability calls.
func fltCallNames(cs []traceLine) []string {
	var out []string
	for _, c := range cs {
		if c.Asking != "" {
			out = append(out, c.Method+"("+c.Asking+")")
		} else {
			out = append(out, c.Method)
		}
	}
	return out
}

// fltWarnings returns the texts of the warning steps.
func fltWarnings(lines []traceLine) []string {
	var out []string
	for _, l := range lines {
		if l.Kind == "step" && l.Level == "warning" {
			out = append(out, l.Text)
		}
	}
	return out
}

// fltVolumes decodes the summary's volumes.
type fltVolume struct {
	Volume    string `json:"volume"`
	SpecName  string `json:"spec_name"`
	Published bool   `json:"published"`
	Error     string `json:"error"`
}

func fltVolumes(tb testing.TB, lines []traceLine) []fltVolume {
	tb.Helper()
	var s struct {
		Volumes []fltVolume `json:"volumes"`
	}
	if err := json.Unmarshal([]byte(summary(tb, lines).Raw), &s); err != nil {
		tb.Fatalf("summary: %v", err)
	}
	return s.Volumes
}

func fltStr(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// ---------------------------------------------------------------------------
// 1. Error semantics per gRPC code

// fixtures/samples/staged: PV pv-data, handle vol-data-1, pod default/db
// with UID stagedUID.
const (
	semPV     = "pv-data"
	semHandle = "vol-data-1"
)

// TestSemanticsByCode: NodeStageVolume and NodePublishVolume failing with
// each gRPC code, one attempt. docs/kubelet.md §12 (isFinalError): Canceled,
// DeadlineExceeded, Unavailable, ResourceExhausted and Aborted are
// non-final, so the failure is uncertain and the volume (device) is kept in
// the actual state: the kubelet keeps its directories and calls NodeUnstage
// (NodeUnpublish) on teardown although the mount never succeeded. Every
// other code is final: the kubelet removes what it made (removeMountDir,
// docs/kubelet.md §1.7) and forgets the volume, so no NodeUnstage (NodeUnpublish)
// follows.
//
// Which directories remain right after the failure is read twice: from the
// -v trace (the kubelet's "removed ..." steps between the failed call and
// the next call), and, where a teardown call follows, on the real file
// system while the driver hangs in that call (an injected
// NodeUnstageVolume/NodeUnpublishVolume=hang:800ms:1, which then succeeds).
func TestSemanticsByCode(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir; mostly waiting on the driver
	finals := []string{"Internal", "InvalidArgument", "NotFound", "FailedPrecondition"}
	uncertains := []string{"DeadlineExceeded", "Unavailable", "ResourceExhausted", "Aborted"}
	type tcase struct {
		method string // NodeStageVolume or NodePublishVolume
		code   string
		final  bool
	}
	var cases []tcase
	for _, m := range []string{"NodeStageVolume", "NodePublishVolume"} {
		for _, c := range finals {
			cases = append(cases, tcase{m, c, true})
		}
		for _, c := range uncertains {
			cases = append(cases, tcase{m, c, false})
		}
	}
	for _, tc := range cases {
		kind := map[bool]string{true: "final", false: "uncertain"}[tc.final]
		t.Run(fmt.Sprintf("%s=%s/%s", tc.method, tc.code, kind), func(t *testing.T) {
			t.Parallel()
			work := fltWork(t)
			root := filepath.Join(work, "root")
			st := stagingPath(root, refDriverName, semHandle) // docs/kubelet.md §1.3
			stDir := filepath.Dir(st)
			stData := filepath.Join(stDir, "vol_data.json")
			tp := targetPath(root, stagedUID, semPV) // docs/kubelet.md §1.2
			tpDir := filepath.Dir(tp)
			tpData := filepath.Join(tpDir, "vol_data.json")

			// What follows the failure (docs/kubelet.md §11, §12), and
			// what the kubelet removes right after it (1.7).
			var after, removedNow []string
			hangOn := "" // the first teardown call, held to look at the disk
			switch {
			case tc.method == "NodeStageVolume" && tc.final:
				// The device is forgotten: no SetUp, no UnmountDevice.
				removedNow = []string{st, stData, stDir}
			case tc.method == "NodeStageVolume":
				// Uncertain device: UnmountDevice still runs NodeUnstage.
				after = []string{"NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)", "NodeUnstageVolume"}
				hangOn = "NodeUnstageVolume"
			case tc.final:
				// The pod's volume is forgotten (no NodeUnpublish); the
				// device was staged, so it is unstaged.
				after = []string{"NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)", "NodeUnstageVolume"}
				removedNow = []string{tpData, tpDir} // the mount leaf never existed
				hangOn = "NodeUnstageVolume"
			default:
				after = []string{"NodeUnpublishVolume", "NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)", "NodeUnstageVolume"}
				hangOn = "NodeUnpublishVolume"
			}

			args := []string{"--fault", tc.method + "=" + tc.code}
			if hangOn != "" {
				args = append(args, "--fault", hangOn+"=hang:800ms:1")
			}
			drv := fltStartRef(t, work, args...)
			sim := startSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
				"--node-name", simNode, "--max-attempts", "1", "-o", "json", "-v")

			if hangOn != "" {
				// The driver now sits in the first teardown call: the
				// kubelet's directories are as the failure left them.
				fltWaitLog(t, drv.Log, "call 1 of "+hangOn+" hangs for", 20*time.Second, sim.exited)
				switch {
				case tc.method == "NodeStageVolume": // uncertain
					if fi, err := os.Stat(st); err != nil || !fi.IsDir() {
						t.Errorf("uncertain NodeStage: globalmount %s should be kept (docs/kubelet.md §12), stat: %v", st, err)
					}
					if got, want := readFile(stData), volDataJSON(map[string]string{"volumeHandle": semHandle, "driverName": refDriverName}); got != want {
						t.Errorf("uncertain NodeStage: staging vol_data.json should be kept (docs/kubelet.md §1.6, §12):\n got %q\nwant %q", got, want)
					}
					if isMountPoint(st) {
						t.Errorf("globalmount %s is mounted, but the driver never handled NodeStage", st)
					}
					if fltExists(filepath.Join(root, "pods", stagedUID, "volumes", "kubernetes.io~csi", semPV)) {
						t.Errorf("a pod volume dir exists, but SetUp must not run after a failed MountDevice")
					}
				case tc.final: // NodePublishVolume final
					if fltExists(tpDir) {
						t.Errorf("final NodePublish: %s should be removed with its vol_data.json (docs/kubelet.md §1.7 removeMountDir)", tpDir)
					}
					if !isMountPoint(st) {
						t.Errorf("final NodePublish: the staged globalmount %s should still be mounted until NodeUnstage", st)
					}
				default: // NodePublishVolume uncertain
					want := volDataJSON(map[string]string{"specVolID": semPV, "volumeHandle": semHandle, "driverName": refDriverName,
						"nodeName": simNode, "volumeLifecycleMode": "Persistent", "attachmentID": attachmentName(semHandle, refDriverName, simNode)})
					if got := readFile(tpData); got != want {
						t.Errorf("uncertain NodePublish: the publish vol_data.json should be kept (docs/kubelet.md §1.6, §12):\n got %q\nwant %q", got, want)
					}
					if fltExists(tp) || isMountPoint(tp) {
						t.Errorf("the target %s exists, but the driver never handled NodePublish and the kubelet does not make it (docs/kubelet.md §1.5)", tp)
					}
					if !isMountPoint(st) {
						t.Errorf("globalmount %s should still be mounted", st)
					}
				}
			}

			r := sim.wait(t, 30*time.Second)
			wantCode(t, r, 1)
			op := map[string]string{"NodeStageVolume": "MountVolume.MountDevice", "NodePublishVolume": "MountVolume.SetUp"}[tc.method]
			// The kubelet's event text (generateVolumeMsg), then the status.
			event := fmt.Sprintf("%s failed for volume %q : rpc error: code = %s desc = injected fault %s=%s (call 1 of %s)",
				op, semPV, tc.code, tc.method, tc.code, tc.method)
			hint := ""
			if tc.code == "NotFound" {
				// The simulator's way out of this dead end (issue 23).
				hint = ` (the driver does not know volume "` + semHandle + `": a PersistentVolume's spec.csi.volumeHandle must name a volume that exists on the driver; create one there first (CreateVolume), or let a StorageClass and a claim provision one)`
			}
			if msg := oneLineError(t, r); msg != "csi-kubelet-sim: "+event+hint {
				t.Errorf("error line:\n got %q\nwant %q", msg, "csi-kubelet-sim: "+event+hint)
			}

			lines := parseTrace(t, r)
			failed := fltCallIdx(lines, tc.method)
			if len(failed) != 1 {
				t.Fatalf("want exactly one %s (--max-attempts 1), got %d\n%s", tc.method, len(failed), r)
			}
			fi := failed[0]
			if lines[fi].Code != tc.code {
				t.Errorf("%s answered %q, want %s", tc.method, lines[fi].Code, tc.code)
			}
			var rest []traceLine
			for _, l := range lines[fi+1:] {
				if l.Kind == "call" {
					rest = append(rest, l)
				}
			}
			if got := fltCallNames(rest); strings.Join(got, ",") != strings.Join(after, ",") {
				t.Errorf("calls after the %s %s:\n got %v\nwant %v", kind, tc.method, got, after)
			}
			for _, c := range rest {
				if c.Code != "OK" {
					t.Errorf("teardown call %s answered %s", c.Method, c.Code)
				}
				switch c.Method {
				case "NodeUnstageVolume":
					if fltStr(c.Request, "staging_target_path") != st || fltStr(c.Request, "volume_id") != semHandle {
						t.Errorf("NodeUnstageVolume request %v, want staging_target_path %s", c.Request, st)
					}
				case "NodeUnpublishVolume":
					if fltStr(c.Request, "target_path") != tp || fltStr(c.Request, "volume_id") != semHandle {
						t.Errorf("NodeUnpublishVolume request %v, want target_path %s", c.Request, tp)
					}
				}
			}
			if got := fltRemovals(lines[fi+1 : fltNextCall(lines, fi)]); strings.Join(got, "\n") != strings.Join(removedNow, "\n") {
				t.Errorf("the kubelet's removals right after the %s failure:\n got %q\nwant %q", kind, got, removedNow)
			}
			// A final error's event has no mark (docs/kubelet.md §12): the
			// kubelet retries it all the same; the others say what they are.
			warning := event + " (" + kind + ")"
			if kind == "final" {
				warning = event
			}
			if ws := fltWarnings(lines); !slices.Contains(ws, warning) {
				t.Errorf("no warning step %q in %q", warning, ws)
			}
			vols := fltVolumes(t, lines)
			if len(vols) != 1 || vols[0].Published || vols[0].Error != event {
				t.Errorf("summary volumes %+v, want one unpublished with error %q", vols, event)
			}
			fltAssertClean(t, root, work)
		})
	}
}

// ---------------------------------------------------------------------------
// 2. Retries, a hang, a crash

// TestRetryBackoff: NodePublishVolume answers Unavailable twice (uncertain,
// docs/kubelet.md §12) then succeeds. The kubelet retries with its exponential
// backoff: 500 ms after the first failure, doubling (1 s after the second);
// --max-attempts and --retry-for bound the retries.
func TestRetryBackoff(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		codes     []string // of the NodePublishVolume calls
		backoffs  []string // the trace's backoff notes
		succeeded bool
	}{
		{"max-attempts-3", []string{"--max-attempts", "3"}, []string{"Unavailable", "Unavailable", "OK"}, []string{"500ms", "1s"}, true},
		{"max-attempts-2", []string{"--max-attempts", "2"}, []string{"Unavailable", "Unavailable"}, []string{"500ms"}, false},
		// The first retry starts 500 ms in; the second would start at
		// 0.5 s + 1 s, past 1.2 s.
		{"retry-for-1200ms", []string{"--retry-for", "1200ms"}, []string{"Unavailable", "Unavailable"}, []string{"500ms"}, false},
		{"retry-for-2s", []string{"--retry-for", "2s"}, []string{"Unavailable", "Unavailable", "OK"}, []string{"500ms", "1s"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := fltWork(t)
			root := filepath.Join(work, "root")
			drv := fltStartRef(t, work, "--fault", "NodePublishVolume=Unavailable:2")
			r := runSim(t, append([]string{"run", "-f", sample(t, "staged"), "--endpoint", "unix://" + drv.Sock, "--root-dir", root,
				"--node-name", simNode, "-o", "json", "-v"}, tc.args...)...)
			lines := parseTrace(t, r)

			pubs := fltCallIdx(lines, "NodePublishVolume")
			var codes []string
			for _, i := range pubs {
				codes = append(codes, lines[i].Code)
			}
			if strings.Join(codes, ",") != strings.Join(tc.codes, ",") {
				t.Fatalf("NodePublishVolume answers %v, want %v\n%s", codes, tc.codes, r)
			}
			// Each attempt is a whole SetUp; MountDevice succeeded once and
			// is not repeated.
			if n := len(fltCallIdx(lines, "NodeStageVolume")); n != 1 {
				t.Errorf("%d NodeStageVolume calls, want 1", n)
			}
			var notes []string
			for _, l := range lines {
				if l.Kind == "step" && strings.Contains(l.Text, "the kubelet retries after its backoff of") {
					notes = append(notes, l.Text)
				}
			}
			var wantNotes []string
			for i, b := range tc.backoffs {
				wantNotes = append(wantNotes, fmt.Sprintf("attempt %d failed; the kubelet retries after its backoff of %s", i+1, b))
			}
			if strings.Join(notes, "\n") != strings.Join(wantNotes, "\n") {
				t.Errorf("backoff steps:\n got %q\nwant %q", notes, wantNotes)
			}
			// The waits really happened: from the end of a failed attempt
			// to the next NodePublishVolume, at least the backoff.
			for i := 1; i < len(pubs); i++ {
				prev, next := lines[pubs[i-1]], lines[pubs[i]]
				gap := next.Time.Sub(prev.Time.Add(time.Duration(prev.DurationMS * float64(time.Millisecond))))
				want := 500 * time.Millisecond << (i - 1)
				if gap < want || gap > want+1500*time.Millisecond { // late under load, never early
					t.Errorf("attempt %d started %v after attempt %d failed, want the backoff %v (docs/kubelet.md §12)", i+1, gap, i, want)
				}
			}
			// Uncertain, then mounted or still uncertain: either way the
			// teardown unpublishes and unstages.
			var teardown []string
			for _, l := range lines[pubs[len(pubs)-1]+1:] {
				if l.Kind == "call" && (l.Method == "NodeUnpublishVolume" || l.Method == "NodeUnstageVolume") {
					teardown = append(teardown, l.Method)
				}
			}
			if strings.Join(teardown, ",") != "NodeUnpublishVolume,NodeUnstageVolume" {
				t.Errorf("teardown calls %v, want NodeUnpublishVolume then NodeUnstageVolume", teardown)
			}
			if tc.succeeded {
				// The operation succeeded on its third attempt: the pod
				// ran, which is what the kubelet reports (README "Exit codes",
				// 0: everything the kubelet did succeeded).
				if r.Code != 0 {
					t.Errorf("the third NodePublishVolume succeeded, so the run should exit 0; got exit %d, stderr %q", r.Code, r.Stderr)
				}
				if vols := fltVolumes(t, lines); len(vols) != 1 || !vols[0].Published || vols[0].Error != "" {
					t.Errorf("summary volumes %+v, want one published without error", vols)
				}
			} else {
				wantCode(t, r, 1)
				n := len(tc.codes)
				oneLineError(t, r, fmt.Sprintf(`MountVolume.SetUp failed for volume "pv-data" : rpc error: code = Unavailable desc = injected fault NodePublishVolume=Unavailable:2 (call %d of NodePublishVolume)`, n))
			}
			fltAssertClean(t, root, work)
		})
	}
}

// TestSemanticsHangTimeout: NodeStageVolume hangs 10 minutes on its first
// call, the kubelet's operation timeout is 1 s: the call ends
// DeadlineExceeded, which is uncertain (docs/kubelet.md §12), so teardown
// calls NodeUnstageVolume; the run does not wait for the hang (runSim's own
// bound, far below the hang, fails a run that does). No wall-clock upper
// bound: a loaded machine stretches every step; only the lower bound the
// timeout sets is asserted, which no load can break.
func TestSemanticsHangTimeout(t *testing.T) {
	t.Parallel()
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work, "--fault", "NodeStageVolume=hang:10m:1")
	start := time.Now()
	r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--timeout", "1s", "--max-attempts", "1", "-o", "json", "-v")
	elapsed := time.Since(start)
	wantCode(t, r, 1)
	oneLineError(t, r, `MountVolume.MountDevice failed for volume "pv-data" : rpc error: code = DeadlineExceeded`)
	lines := parseTrace(t, r)
	st := fltCallIdx(lines, "NodeStageVolume")
	if len(st) != 1 {
		t.Fatalf("%d NodeStageVolume calls, want 1\n%s", len(st), r)
	}
	c := lines[st[0]]
	if c.Code != "DeadlineExceeded" || !c.TimedOut {
		t.Errorf("NodeStageVolume answered %s (timed_out %v), want DeadlineExceeded by the operation's timeout", c.Code, c.TimedOut)
	}
	// The kubelet's event names no timeout; the simulator says which call
	// did not answer within which --timeout.
	if !strings.HasSuffix(strings.TrimSpace(r.Stderr), "(NodeStageVolume did not answer within --timeout 1s)") {
		t.Errorf("the error does not say which call timed out:\n%s", r.Stderr)
	}
	// A deadline never fires early: the run lasted at least the timeout.
	if elapsed < time.Second {
		t.Errorf("the run took %v, less than the 1s operation timeout that ended NodeStageVolume", elapsed)
	}
	var rest []traceLine
	for _, l := range lines[st[0]+1:] {
		if l.Kind == "call" {
			rest = append(rest, l)
		}
	}
	if got := fltCallNames(rest); strings.Join(got, ",") != "NodeGetCapabilities(STAGE_UNSTAGE_VOLUME),NodeUnstageVolume" {
		t.Errorf("calls after the timeout %v, want NodeGetCapabilities(STAGE_UNSTAGE_VOLUME), NodeUnstageVolume (uncertain device, docs/kubelet.md §12)", got)
	}
	if got := fltRemovals(lines[st[0]+1 : fltNextCall(lines, st[0])]); len(got) > 0 {
		t.Errorf("the kubelet removed %v after an uncertain NodeStage; it keeps its directories (docs/kubelet.md §12)", got)
	}
	found := false
	for _, w := range fltWarnings(lines) {
		found = found || (strings.HasPrefix(w, `MountVolume.MountDevice failed for volume "pv-data" : rpc error: code = DeadlineExceeded`) && strings.HasSuffix(w, "(uncertain)"))
	}
	if !found {
		t.Errorf("no uncertain MountDevice warning in %q", fltWarnings(lines))
	}
	if log := readFile(drv.Log); !strings.Contains(log, "context ended while hanging") {
		t.Errorf("the driver did not see the call's deadline end its hang:\n%s", log)
	}
	fltAssertClean(t, root, work)
}

// TestSemanticsDriverCrash: the driver exits (code 3, no clean-up) inside
// NodePublishVolume. The kubelet's client sees the connection drop
// (Unavailable), which is uncertain (docs/kubelet.md §12), so teardown still
// calls NodeUnpublishVolume, which cannot connect; the simulator then
// unmounts what the dead driver left under the root dir.
//
// Exit code 1, not 3: the driver was reached, registered, staged, and
// accepted the NodePublishVolume call; the call failed because of the
// driver (README "Exit codes": 1, the driver failed a call), and the error the run
// reports is the kubelet's SetUp event for that call. 3 is for an
// environment where the driver cannot be reached in the first place
// (TestEnvironmentFaults).
func TestSemanticsDriverCrash(t *testing.T) {
	t.Parallel()
	work := fltWork(t)
	root := filepath.Join(work, "root")
	drv := fltStartRef(t, work, "--fault", "NodePublishVolume=crash")
	r := runSim(t, "run", "-f", sample(t, "staged"), "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
		"--node-name", simNode, "--max-attempts", "1", "-o", "json", "-v")

	select {
	case <-drv.exited:
	case <-time.After(5 * time.Second):
		t.Fatalf("the driver did not crash")
	}
	if code := drv.cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("the crashed driver exited %d, want 3 (--fault crash)", code)
	}
	wantCode(t, r, 1)
	oneLineError(t, r, `MountVolume.SetUp failed for volume "pv-data" : rpc error: code = Unavailable`)

	lines := parseTrace(t, r)
	pub := fltCallIdx(lines, "NodePublishVolume")
	if len(pub) != 1 || lines[pub[0]].Code != "Unavailable" {
		t.Fatalf("want one NodePublishVolume answered Unavailable (connection lost)\n%s", r)
	}
	unpub := fltCallIdx(lines, "NodeUnpublishVolume")
	if len(unpub) != 1 || unpub[0] < pub[0] {
		t.Errorf("teardown should still try NodeUnpublishVolume once after the uncertain NodePublish, got %d", len(unpub))
	} else if c := lines[unpub[0]]; c.Code != "Unavailable" || !strings.Contains(c.Error, "connect") {
		t.Errorf("NodeUnpublishVolume to the dead driver: code %s error %q, want Unavailable, cannot connect", c.Code, c.Error)
	}
	ws := strings.Join(fltWarnings(lines), "\n")
	for _, w := range []string{`MountVolume.SetUp failed for volume "pv-data" : rpc error: code = Unavailable`, "(uncertain)",
		`UnmountVolume.TearDown failed for volume "pv-data"`} {
		if !strings.Contains(ws, w) {
			t.Errorf("warnings do not mention %q:\n%s", w, ws)
		}
	}
	// The teardown failed, so the simulator leaves the volume as it is (the
	// dead driver's staging mount included), says whose it is, and names
	// `cleanup`; it unmounts nothing the driver has not released.
	var lb struct {
		Left []struct{ Path, Owner string } `json:"left"`
	}
	_ = json.Unmarshal(summary(t, lines).LeftBehind, &lb)
	st := stagingPath(root, refDriverName, semHandle)
	if !mountedAt(st) {
		t.Errorf("the staging mount %s of the volume whose teardown failed was touched", st)
	}
	if len(lb.Left) == 0 || lb.Left[0].Owner != "the simulator's" {
		t.Errorf("summary left_behind.left = %+v, want the kept volume as the simulator's", lb.Left)
	}
	if !strings.Contains(r.Stderr, "csi-kubelet-sim cleanup --root-dir "+root) {
		t.Errorf("the error does not name the cleanup command:\n%s", r.Stderr)
	}
	// A driver that comes back gets the unpublish and unstage from
	// `cleanup`, and then nothing of the run is left.
	_ = os.Remove(drv.Sock)
	drv2 := fltStartRef(t, work)
	c := runSim(t, "cleanup", "--root-dir", root, "--endpoint", "unix://"+drv2.Sock, "--node-name", simNode, "-o", "json")
	wantCode(t, c, 0)
	for _, m := range []string{"NodeUnpublishVolume", "NodeUnstageVolume"} {
		if n := len(fltCallIdx(parseTrace(t, c), m)); n != 1 {
			t.Errorf("cleanup made %d %s calls, want 1\n%s", n, m, c)
		}
	}
	fltAssertClean(t, root, work)
}

// mountedAt tells whether p is a mount point.
func mountedAt(p string) bool {
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(p))
	return err == nil && len(ms) > 0
}
