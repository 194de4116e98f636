package node

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// docs/kubelet.md §12: Canceled, DeadlineExceeded, Unavailable, ResourceExhausted
// and Aborted are non-final, as is any error that is not a gRPC status;
// every other code is final.
func TestIsFinalError(t *testing.T) {
	nonFinal := []codes.Code{codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted}
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		want := !slices.Contains(nonFinal, c)
		t.Run(c.String(), func(t *testing.T) {
			if got := csiplugin.IsFinalError(status.Error(c, "x")); got != want {
				t.Errorf("isFinalError(%v) = %t, want %t", c, got, want)
			}
		})
	}
	t.Run("not a gRPC status", func(t *testing.T) {
		if csiplugin.IsFinalError(errors.New("connection reset")) {
			t.Errorf("a plain error is final, want non-final")
		}
	})
}

func TestKindString(t *testing.T) {
	for k, want := range map[csiplugin.Kind]string{csiplugin.Final: "final", csiplugin.Uncertain: "uncertain", csiplugin.Transient: "transient"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), want)
		}
	}
}

var (
	finalCodes     = []codes.Code{codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.Internal, codes.Unknown}
	nonFinalCodes  = []codes.Code{codes.DeadlineExceeded, codes.Unavailable, codes.Aborted, codes.ResourceExhausted, codes.Canceled}
	allFailedCodes = append(append([]codes.Code{}, finalCodes...), nonFinalCodes...)
)

// docs/kubelet.md §1.7, §12: a failed NodePublish with a final code removes the
// volume dir and forgets the mount; a non-final code leaves it uncertain:
// dirs kept and NodeUnpublish on teardown.
func TestNodePublishErrorKinds(t *testing.T) {
	for _, code := range allFailedCodes {
		final := slices.Contains(finalCodes, code)
		t.Run(code.String(), func(t *testing.T) {
			e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
			e.drv.Errors("NodePublishVolume", status.Error(code, "publish failed"))
			ve := volErr(t, e.mount("app-1"))

			wantKind := csiplugin.Uncertain
			if final {
				wantKind = csiplugin.Final
			}
			if ve.Kind != wantKind {
				t.Errorf("kind = %v, want %v", ve.Kind, wantKind)
			}
			wantMsg := fmt.Sprintf(`MountVolume.SetUp failed for volume "pv-1" : rpc error: code = %s desc = publish failed`, code)
			if ve.Error() != wantMsg {
				t.Errorf("error = %q\nwant %q", ve.Error(), wantMsg)
			}
			if status.Code(ve) != code {
				t.Errorf("status.Code(error) = %v, want %v", status.Code(ve), code)
			}
			volDir := filepath.Dir(targetPV1(e.root))
			if final && exists(volDir) {
				t.Errorf("final error: %s kept, want removed with its vol_data.json", volDir)
			}
			if !final && !exists(volDir+"/vol_data.json") {
				t.Errorf("uncertain error: %s/vol_data.json removed, want kept", volDir)
			}
			if !isDir(globalmountVol1(e.root)) {
				t.Errorf("a NodePublish failure touched globalmount")
			}

			e.drv.ClearCalls()
			e.unmountOK("app-1")
			want := []string{"UnmountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)", "UnmountDevice:NodeUnstageVolume"}
			if !final {
				want = append([]string{"TearDown:NodeUnpublishVolume"}, want...)
			}
			if got := seq(e.drv.Calls()); !slices.Equal(got, want) {
				t.Errorf("teardown calls:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// docs/kubelet.md §1.7, §12: the same for NodeStage: a final code removes
// globalmount, vol_data.json and <sha> and nothing is unstaged; a
// non-final one keeps them and the kubelet unstages on teardown. No
// NodePublish follows a failed NodeStage.
func TestNodeStageErrorKinds(t *testing.T) {
	for _, code := range allFailedCodes {
		final := slices.Contains(finalCodes, code)
		t.Run(code.String(), func(t *testing.T) {
			e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
			e.drv.Errors("NodeStageVolume", status.Error(code, "stage failed"))
			ve := volErr(t, e.mount("app-1"))

			wantKind := csiplugin.Uncertain
			if final {
				wantKind = csiplugin.Final
			}
			if ve.Kind != wantKind || ve.Operation != "MountVolume.MountDevice" {
				t.Errorf("kind, operation = %v, %q; want %v, MountVolume.MountDevice", ve.Kind, ve.Operation, wantKind)
			}
			if status.Code(ve) != code {
				t.Errorf("status.Code(error) = %v, want %v", status.Code(ve), code)
			}
			if n := len(only(e.drv.Calls(), "NodePublishVolume")); n != 0 {
				t.Errorf("%d NodePublish calls after a failed NodeStage", n)
			}
			shaDir := filepath.Dir(globalmountVol1(e.root))
			if final && exists(shaDir) {
				t.Errorf("final error: %s kept, want removed", shaDir)
			}
			if !final && (!isDir(shaDir+"/globalmount") || !exists(shaDir+"/vol_data.json")) {
				t.Errorf("uncertain error: globalmount or vol_data.json removed, want kept")
			}

			e.drv.ClearCalls()
			e.unmountOK("app-1")
			var want []string
			if !final {
				want = []string{"UnmountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)", "UnmountDevice:NodeUnstageVolume"}
			}
			if got := seq(e.drv.Calls()); !slices.Equal(got, want) {
				t.Errorf("teardown calls:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// docs/kubelet.md §12: since 1.36 a non-final NodeGetCapabilities error is
// uncertain; in 1.35 it is not (the SINGLE_NODE_MULTI_WRITER query made
// inside NodePublishVolume passes it through unchanged).
func TestCapabilityErrorByVersion(t *testing.T) {
	tests := []struct {
		minor      int
		code       codes.Code
		wantKind   csiplugin.Kind
		wantKeptUp bool // volume dir kept and NodeUnpublish on teardown
	}{
		{35, codes.Unavailable, csiplugin.Final, false},
		{36, codes.Unavailable, csiplugin.Uncertain, true},
		{37, codes.Unavailable, csiplugin.Uncertain, true},
		{37, codes.Internal, csiplugin.Final, false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("1.%d %v", tc.minor, tc.code), func(t *testing.T) {
			e := newEnv(t, docs(csiDriverDoc("volumeLifecycleModes: [Ephemeral]"), podDoc("app-1", "pod-uid-1", inlineVol("scratch", ""))),
				newFakeDriver(), withVersion(tc.minor))
			// SetUp of an inline volume: VOLUME_MOUNT_GROUP, then SINGLE_NODE_MULTI_WRITER.
			e.drv.Errors("NodeGetCapabilities", nil, status.Error(tc.code, "driver restarting"))
			ve := volErr(t, e.mount("app-1"))
			if ve.Kind != tc.wantKind {
				t.Errorf("kind = %v, want %v", ve.Kind, tc.wantKind)
			}
			if n := len(only(e.drv.Calls(), "NodePublishVolume")); n != 0 {
				t.Errorf("NodePublish called")
			}
			volDir := e.root + "/pods/pod-uid-1/volumes/kubernetes.io~csi/scratch"
			if exists(volDir) != tc.wantKeptUp {
				t.Errorf("%s exists = %t, want %t", volDir, exists(volDir), tc.wantKeptUp)
			}
			e.drv.ClearCalls()
			e.unmountOK("app-1")
			var want []string
			if tc.wantKeptUp {
				want = []string{"TearDown:NodeUnpublishVolume"}
			}
			if got := seq(e.drv.Calls()); !slices.Equal(got, want) {
				t.Errorf("teardown calls = %q, want %q", got, want)
			}
		})
	}
}

// A failed NodeUnpublish keeps the mount, and the device is not unstaged
// while the mount remains; the next teardown retries.
func TestNodeUnpublishFailure(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
	e.mountOK("app-1")
	e.drv.ClearCalls()
	e.drv.Errors("NodeUnpublishVolume", status.Error(codes.Internal, "busy"))
	errs := e.unmount("app-1")
	const want = `UnmountVolume.TearDown failed for volume "pv-1" : kubernetes.io/csi: Unmounter.TearDownAt failed: rpc error: code = Internal desc = busy`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors = %v, want [%s]", errs, want)
	}
	if got := seq(e.drv.Calls()); !slices.Equal(got, []string{"TearDown:NodeUnpublishVolume"}) {
		t.Errorf("calls = %q, want only the failed NodeUnpublish", got)
	}
	e.drv.ClearCalls()
	e.unmountOK("app-1")
	want2 := []string{"TearDown:NodeUnpublishVolume", "UnmountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)", "UnmountDevice:NodeUnstageVolume"}
	if got := seq(e.drv.Calls()); !slices.Equal(got, want2) {
		t.Errorf("retry calls = %q, want %q", got, want2)
	}
}

// A failed NodeUnstage keeps the device (and its dirs) for a retry.
func TestNodeUnstageFailure(t *testing.T) {
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), newFakeDriver(capStage))
	e.mountOK("app-1")
	e.drv.Errors("NodeUnstageVolume", status.Error(codes.Internal, "busy"))
	errs := e.unmount("app-1")
	const want = `UnmountDevice failed for volume "pv-1" : kubernetes.io/csi: attacher.UnmountDevice failed: rpc error: code = Internal desc = busy`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors = %v, want [%s]", errs, want)
	}
	if !exists(globalmountVol1(e.root)) {
		t.Errorf("globalmount removed after a failed NodeUnstage")
	}
	e.drv.ClearCalls()
	e.unmountOK("app-1")
	want2 := []string{"UnmountDevice:NodeGetCapabilities(STAGE_UNSTAGE_VOLUME)", "UnmountDevice:NodeUnstageVolume"}
	if got := seq(e.drv.Calls()); !slices.Equal(got, want2) {
		t.Errorf("retry calls = %q, want %q", got, want2)
	}
}
