package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
			if got := e.k.requiresRepublish(e.pod("app-1")); got != tc.requires {
				t.Errorf("RequiresRepublish = %t, want %t", got, tc.requires)
			}
			e.drv.ClearCalls()
			before := len(e.steps(false))
			if errs := e.k.republish(context.Background(), e.pod("app-1"), 1); len(errs) != 0 {
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
			errs := e.k.republish(context.Background(), e.pod("app-1"), 1)
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
			if errs := e.k.republish(context.Background(), e.pod("app-1"), 2); len(errs) != 0 {
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
	errs := e.k.republish(context.Background(), e.pod("app-1"), 1)
	const want = `MountVolume.WaitForAttach failed for volume "pv-1" : volume vol-1 is not attached for volume attachment ` + attachmentVol1
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors %v, want %q", errs, want)
	}
	if ve := errs[0].(*VolumeError); ve.Kind != Transient {
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
			e.k.tokens = &fakeTokens{token: func(aud string) string {
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
			if errs := e.k.republish(context.Background(), e.pod("app-1"), 1); len(errs) != 0 {
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
	if errs := e.k.republish(context.Background(), e.pod("app-1"), 2); len(errs) != 0 {
		t.Fatal(errs)
	}
	want := []string{"MapPodDevice#2:NodeGetCapabilities(SINGLE_NODE_MULTI_WRITER)", "MapPodDevice#2:NodePublishVolume"}
	if got := seq(e.drv.Calls()); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	e.unmountOK("app-1")
}
