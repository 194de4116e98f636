package node

import (
	"context"
	"os"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
)

// stepController notes when the plan's controller runs.
type stepController struct {
	steps *[]string
}

func (c stepController) Prepare(context.Context, *csiplugin.Registration, []*corev1.Pod) error {
	*c.steps = append(*c.steps, "prepare")
	return nil
}

func (c stepController) Finish(context.Context, func(driver, handle string) bool) []error {
	*c.steps = append(*c.steps, "finish")
	return nil
}

// A plan's WhileRunning gets each mounted pod between its mount and the
// teardown, after the Controller's Prepare and before its Finish; what it
// unmounts itself the teardown finds gone (one NodeUnpublish, one
// NodeUnstage); RemoveRoot takes the emptied root dir away. This is the
// door conformance goes through.
func TestRunWhileRunning(t *testing.T) {
	drv := newFakeDriver(capStage)
	e := newUnregisteredEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
	var steps []string
	plan := Plan{
		Controller: stepController{&steps},
		RemoveRoot: true,
		WhileRunning: func(ctx context.Context, p *RunningPod) {
			steps = append(steps, "running "+p.Result.Pod.Name)
			if !slices.Contains(seq(drv.Calls()), "SetUp:NodePublishVolume") {
				t.Errorf("running before NodePublishVolume: %v", seq(drv.Calls()))
			}
			if errs := p.Unmount(ctx); len(errs) > 0 {
				t.Errorf("Unmount: %v", errs)
			}
		},
	}
	out := e.k.Run(context.Background(), plan)
	if out.RegErr != nil || out.MountErr != nil || out.Failed != 0 || len(out.TeardownErrs) != 0 {
		t.Fatalf("outcome: reg %v, mount %v, failed %d, teardown %v", out.RegErr, out.MountErr, out.Failed, out.TeardownErrs)
	}
	if want := []string{"prepare", "running app-1", "finish"}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
	for _, m := range []string{"NodeUnpublishVolume", "NodeUnstageVolume"} {
		if n := len(only(drv.Calls(), m)); n != 1 {
			t.Errorf("%s: %d calls, want 1", m, n)
		}
	}
	if _, err := os.Stat(e.root); !os.IsNotExist(err) {
		t.Errorf("root dir after a RemoveRoot plan: %v, want it gone", err)
	}
}

// A pod whose volume fails to mount is not handed to WhileRunning.
func TestRunWhileRunningNotOnFailure(t *testing.T) {
	drv := newFakeDriver(capStage)
	drv.Inject("NodeStageVolume", csifake.Fault{Code: codes.InvalidArgument})
	e := newUnregisteredEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv)
	called := false
	out := e.k.Run(context.Background(), Plan{WhileRunning: func(context.Context, *RunningPod) { called = true }})
	if out.Failed != 1 {
		t.Fatalf("failed pods %d, want 1", out.Failed)
	}
	if called {
		t.Error("WhileRunning was called for a pod whose volume failed")
	}
}
