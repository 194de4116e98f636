package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/operationexecutor"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
)

// republishDriver is a CSIDriver with requiresRepublish and the given
// extra spec lines.
func republishDriver(extra ...string) string {
	return csiDriverDoc(append([]string{"requiresRepublish: true"}, extra...)...)
}

// docs/kubelet.md §5: a pod sync of a running pod repeats SetUp for a driver
// with requiresRepublish: WaitForAttach again, no MountDevice, the same
// publish request; nothing at all for a driver without it.
func TestRepublishCalls(t *testing.T) {
	attached := vaDoc(attachmentVol1, "pv-1", true, "attachmentMetadata: {dev: /dev/x}")
	tests := []struct {
		name      string
		manifests string
		requires  bool
		want      []string
		wantSteps []string // steps that must be among the round's
	}{
		{
			name:      "requiresRepublish, attach",
			manifests: docs(republishDriver("attachRequired: true"), attached, pv1, pvc1, pod1),
			requires:  true,
			want: []string{
				"SetUp#1:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
				"SetUp#1:NodeGetCapabilities(VOLUME_MOUNT_GROUP)",
				"SetUp#1:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)",
				"SetUp#1:NodePublishVolume",
			},
			wantSteps: []string{"WaitForAttach: VolumeAttachment " + attachmentVol1 + " is attached"},
		},
		{
			name:      "requiresRepublish, no attach",
			manifests: docs(republishDriver("attachRequired: false"), pv1, pvc1, pod1),
			requires:  true,
			want: []string{
				"SetUp#1:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)",
				"SetUp#1:NodeGetCapabilities(VOLUME_MOUNT_GROUP)",
				"SetUp#1:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)",
				"SetUp#1:NodePublishVolume",
			},
		},
		{
			name:      "no requiresRepublish",
			manifests: docs(noAttachDriver, pv1, pvc1, pod1),
		},
		{
			name:      "no CSIDriver object",
			manifests: docs(pv1, pvc1, pod1, vaDoc(attachmentVol1, "pv-1", true)),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.manifests, newFakeDriver(capStage))
			e.mountOK("app-1")
			first := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume")
			if got := e.k.vm.RequiresRepublish(e.pod("app-1")); got != tc.requires {
				t.Errorf("RequiresRepublish = %t, want %t", got, tc.requires)
			}
			e.drv.ClearCalls()
			before := len(e.steps(false))
			if errs := e.k.vm.Republish(context.Background(), e.pod("app-1"), 1); len(errs) != 0 {
				t.Fatalf("Republish: %v", errs)
			}
			if got := seq(e.drv.Calls()); !slices.Equal(got, tc.want) {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
			round := e.steps(false)[before:]
			for _, s := range tc.wantSteps {
				if !slices.Contains(round, s) {
					t.Errorf("steps %q, want %q among them", round, s)
				}
			}
			if tc.requires {
				again := one[*csi.NodePublishVolumeRequest](t, e.drv.Calls(), "NodePublishVolume")
				protoEqual(t, "republished request", again, first)
			}
			e.unmountOK("app-1")
		})
	}
}

// A republish whose NodePublishVolume fails with a final error: up to 1.35
// the kubelet removes the target as for a first mount; from 1.36 it keeps
// it, the pod still uses it (docs/kubelet.md §5, kubernetes#121271). Either way
// the volume stays mounted and the next sync tries again.
func TestRepublishFailureKeepsTarget(t *testing.T) {
	for _, tc := range []struct {
		minor    int
		wantKeep bool
	}{{35, false}, {36, true}, {37, true}} {
		t.Run(fmt.Sprintf("1.%d", tc.minor), func(t *testing.T) {
			e := newEnv(t, docs(republishDriver("attachRequired: false"), pv1, pvc1, pod1), newFakeDriver(capStage), withVersion(tc.minor))
			e.mountOK("app-1")
			e.drv.Errors("NodePublishVolume", status.Error(codes.InvalidArgument, "bad"))
			errs := e.k.vm.Republish(context.Background(), e.pod("app-1"), 1)
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", errs)
			}
			const want = `MountVolume.SetUp failed for volume "pv-1" : rpc error: code = InvalidArgument desc = bad`
			if errs[0].Error() != want {
				t.Errorf("error %q, want %q", errs[0], want)
			}
			if kept := exists(targetPV1(e.root)); kept != tc.wantKeep {
				t.Errorf("target kept = %t, want %t", kept, tc.wantKeep)
			}
			e.drv.ClearCalls()
			if errs := e.k.vm.Republish(context.Background(), e.pod("app-1"), 2); len(errs) != 0 {
				t.Errorf("second republish: %v", errs)
			}
			if n := len(only(e.drv.Calls(), "NodePublishVolume")); n != 1 {
				t.Errorf("second republish: %d NodePublishVolume, want 1", n)
			}
			e.unmountOK("app-1")
		})
	}
}

// A republish when the VolumeAttachment is no longer attached: WaitForAttach
// fails (transient) and no call is made.
func TestRepublishWaitForAttachFails(t *testing.T) {
	e := newEnv(t, docs(republishDriver("attachRequired: true"), vaDoc(attachmentVol1, "pv-1", true), pv1, pvc1, pod1), newFakeDriver(capStage))
	e.mountOK("app-1")
	va, _ := e.cluster.VolumeAttachment(attachmentVol1)
	va.Status.Attached = false
	e.drv.ClearCalls()
	errs := e.k.vm.Republish(context.Background(), e.pod("app-1"), 1)
	const want = `MountVolume.WaitForAttach failed for volume "pv-1" : volume vol-1 is not attached for volume attachment ` + attachmentVol1
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors %v, want %q", errs, want)
	}
	if ve := errs[0].(*csiplugin.VolumeError); ve.Kind != csiplugin.Transient {
		t.Errorf("kind %v, want transient", ve.Kind)
	}
	if calls := e.drv.Calls(); len(calls) != 0 {
		t.Errorf("calls %q, want none", seq(calls))
	}
}

// docs/kubelet.md §4.6: a republish tells whether the driver got the tokens it
// got last time (the kubelet's cache) or new ones.
func TestRepublishTokens(t *testing.T) {
	for _, tc := range []struct {
		name    string
		renew   bool
		wantMsg string
	}{
		{"same tokens", false, "republish: same tokens as the last NodePublishVolume (the kubelet's token cache)"},
		{"renewed tokens", true, "republish: tokens renewed since the last NodePublishVolume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, docs(republishDriver("attachRequired: false", "tokenRequests: [{audience: vault}]"), pv1, pvc1, pod1), newFakeDriver())
			var n atomic.Int32
			e.k.vm.Tokens = &fakeTokens{token: func(aud string) string {
				if !tc.renew {
					return "token-" + aud
				}
				return fmt.Sprintf("token-%s-%d", aud, n.Add(1))
			}}
			e.mountOK("app-1")
			for _, s := range e.steps(false) {
				if strings.HasPrefix(s, "republish:") {
					t.Errorf("first mount noted %q", s)
				}
			}
			if errs := e.k.vm.Republish(context.Background(), e.pod("app-1"), 1); len(errs) != 0 {
				t.Fatal(errs)
			}
			if got := e.steps(false); !slices.Contains(got, tc.wantMsg) {
				t.Errorf("steps %q, want %q", got, tc.wantMsg)
			}
		})
	}
}

// A block volume's republish is the whole map operation again
// (GenerateMapVolumeFunc): MapPodDevice, no SetUpDevice.
func TestRepublishBlock(t *testing.T) {
	m := docs(republishDriver("attachRequired: false"), pvDoc("pv-1", "vol-1", "data-1", "volumeMode: Block"), pvc1, blockPod1)
	e := newEnv(t, m, newFakeDriver(capStage), dryRun)
	e.mountOK("app-1")
	e.drv.ClearCalls()
	if errs := e.k.vm.Republish(context.Background(), e.pod("app-1"), 2); len(errs) != 0 {
		t.Fatal(errs)
	}
	want := []string{"MapPodDevice#2:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)", "MapPodDevice#2:NodePublishVolume"}
	if got := seq(e.drv.Calls()); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	e.unmountOK("app-1")
}

// publishes returns the trace's NodePublishVolume calls.
func publishes(e *testEnv) []csiclient.Call {
	var out []csiclient.Call
	for _, c := range e.trace.Calls() {
		if c.Method == "NodePublishVolume" {
			out = append(out, c)
		}
	}
	return out
}

// docs/kubelet.md §5: with retries on, a failed republish is retried after
// the operation's backoff (500 ms) while the pod runs, without waiting for
// the next pod sync (an hour away here), as the reconciler does; the run is
// not failed by it, and the failed attempt's warning stays in the trace.
// Without retries the failure is the sync's, and the trace says a kubelet
// would retry.
func TestRepublishFailureRetried(t *testing.T) {
	fsVol := docs(republishDriver("attachRequired: false"), pv1, pvc1, pod1)
	block := docs(republishDriver("attachRequired: false"), pvDoc("pv-1", "vol-1", "data-1", "volumeMode: Block"), pvc1, blockPod1)
	for _, tc := range []struct {
		name      string
		manifests string
		retry     operationexecutor.Retry
		dry       bool
		wantPubs  int
		minor     int
	}{
		{"retry-for", fsVol, operationexecutor.Retry{For: 10 * time.Second}, false, 2, 37},
		{"max-attempts", fsVol, operationexecutor.Retry{MaxAttempts: 2}, false, 2, 37},
		// Up to 1.35 the failure removed the target and its vol_data.json;
		// the retry's SetUp writes them again, so the teardown finds them.
		{"1.35", fsVol, operationexecutor.Retry{For: 10 * time.Second}, false, 2, 35},
		{"block", block, operationexecutor.Retry{For: 10 * time.Second}, true, 2, 37},
		{"no retries", fsVol, operationexecutor.Retry{}, false, 1, 37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []envOption{withVersion(tc.minor), func(c *Config) { c.Retry = tc.retry }}
			if tc.dry {
				opts = append(opts, dryRun)
			}
			e := newEnv(t, tc.manifests, newFakeDriver(capStage), opts...)
			e.mountOK("app-1")
			first := len(publishes(e))
			e.drv.Errors("NodePublishVolume", status.Error(codes.InvalidArgument, "bad"))
			var rep volumemanager.RunningReport
			e.k.vm.RunPod(context.Background(), e.pod("app-1"), 1500*time.Millisecond, volumemanager.RunningSchedule{SyncFrequency: time.Hour}, &rep)
			pubs := publishes(e)[first:]
			if len(pubs) != tc.wantPubs {
				t.Fatalf("%d NodePublishVolume while the pod ran, want %d", len(pubs), tc.wantPubs)
			}
			if pubs[0].Code != codes.InvalidArgument {
				t.Errorf("first republish: %v, want the injected InvalidArgument", pubs[0].Code)
			}
			got := rep.Snapshot()
			retried := tc.wantPubs == 2
			if retried {
				failedAt := pubs[0].Start.Add(pubs[0].Duration)
				if gap := pubs[1].Start.Sub(failedAt); gap < operationexecutor.InitialDurationBeforeRetry-20*time.Millisecond {
					t.Errorf("retry %v after the failure, want the backoff of 500ms", gap)
				}
				if pubs[1].Err != nil {
					t.Errorf("retry failed: %v", pubs[1].Err)
				}
				if !tc.dry && !exists(targetPV1(e.root)) {
					t.Errorf("target %s gone after the retry", targetPV1(e.root))
				}
				if got.Syncs != 1 || got.RepublishFailed != 0 || got.RepublishRetried != 1 || len(got.Errs) != 0 {
					t.Errorf("report: %d syncs, %d failed, %d retried, errors %v; want 1, 0, 1, none", got.Syncs, got.RepublishFailed, got.RepublishRetried, got.Errs)
				}
			} else if got.RepublishFailed != 1 || got.RepublishRetried != 0 || len(got.Errs) != 1 {
				t.Errorf("report: %d failed, %d retried, errors %v; want the one failure", got.RepublishFailed, got.RepublishRetried, got.Errs)
			}
			const retryNote = "attempt 1 failed; the kubelet retries after its backoff of 500ms"
			const onlyNote = "the kubelet retries this remount after its backoff of 500ms while the pod runs; --retry-for or --max-attempts does so here"
			steps := e.steps(false)
			if slices.Contains(steps, retryNote) != retried || slices.Contains(steps, onlyNote) == retried {
				t.Errorf("note %q present %t, %q present %t; want the first when retried, else the second", retryNote, slices.Contains(steps, retryNote), onlyNote, slices.Contains(steps, onlyNote))
			}
			if w := e.steps(true); len(w) != 1 || !strings.Contains(w[0], "failed for volume \"pv-1\"") {
				t.Errorf("warnings %q, want the failed attempt's", w)
			}
			e.unmountOK("app-1")
		})
	}
}

// A remount that keeps failing is retried only while the pod runs: the
// hold's end stops the wait for the next attempt, and the last error is the
// failure. Pod syncs that come meanwhile start nothing for the volume (one
// operation per volume at a time).
func TestRepublishRetryStopsAtHoldEnd(t *testing.T) {
	e := newEnv(t, docs(republishDriver("attachRequired: false"), pv1, pvc1, pod1), newFakeDriver(capStage),
		withVersion(37), func(c *Config) { c.Retry = operationexecutor.Retry{For: time.Minute} })
	e.mountOK("app-1")
	first := len(publishes(e))
	e.drv.FailNext("NodePublishVolume", codes.Internal, 10)
	var rep volumemanager.RunningReport
	start := time.Now()
	// Attempts at 0 s and 0.5 s; the next would be at 1.5 s, after the
	// hold's end. Syncs every 300 ms meanwhile.
	e.k.vm.RunPod(context.Background(), e.pod("app-1"), 1200*time.Millisecond, volumemanager.RunningSchedule{RepublishPeriod: 300 * time.Millisecond}, &rep)
	// A retry that went on would take most of its minute; the count of
	// publishes below says exactly where it stopped. This bound only stops
	// a hang early, far above what a loaded machine takes.
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("runPod took %v: the retry did not stop at the hold's end", d)
	}
	pubs := publishes(e)[first:]
	if len(pubs) != 2 {
		t.Errorf("%d NodePublishVolume, want 2 (the sync's and one retry)", len(pubs))
	}
	for _, p := range pubs {
		if p.Labels.Operation != "SetUp#1" {
			t.Errorf("publish of %s, want only SetUp#1's", p.Labels.Operation)
		}
	}
	got := rep.Snapshot()
	if got.Syncs < 3 || got.RepublishFailed != 1 || got.RepublishRetried != 0 || len(got.Errs) != 1 || !strings.Contains(got.Errs[0].Error(), "injected Internal") {
		t.Errorf("report: %d syncs, %d failed, %d retried, errors %v; want 3+, 1, 0, the injected error", got.Syncs, got.RepublishFailed, got.RepublishRetried, got.Errs)
	}
	steps := e.steps(false)
	for _, want := range []string{
		"attempt 2 failed; the kubelet retries after its backoff of 1s",
		"the pod's run ended before the retry: the remount stays failed",
		"pod sync: the volume's failed remount waits for its retry (the operation's backoff), so this sync starts no other: one operation per volume at a time",
	} {
		if !slices.Contains(steps, want) {
			t.Errorf("no step %q", want)
		}
	}
	e.drv.ClearFaults("NodePublishVolume")
	e.unmountOK("app-1")
}
