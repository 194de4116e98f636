package node

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	csiplugin "github.com/csi-kubelet-sim/csi-kubelet-sim/node/csi"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/rootdir"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node/volumemanager/cache"
)

// recordingController is a Controller that notes when it is called and
// what the kubelet still uses at Finish.
type recordingController struct {
	prepareErr error
	pods       int
	regDriver  string
	inUseAt    []bool
	finished   int
}

func (c *recordingController) Prepare(_ context.Context, reg *csiplugin.Registration, pods []*corev1.Pod) error {
	c.pods, c.regDriver = len(pods), reg.DriverName
	return c.prepareErr
}

func (c *recordingController) Finish(_ context.Context, inUse func(driver, handle string) bool) []error {
	c.finished++
	c.inUseAt = append(c.inUseAt, inUse(testDriver, "vol-own-0"))
	return []error{errors.New("left on the driver")}
}

// The plan's Controller runs once the driver has registered, before any
// pod, and after the teardown, when the kubelet no longer uses the
// volumes; its Finish errors are teardown errors. A failed Prepare mounts
// nothing.
func TestRunController(t *testing.T) {
	drv := newFakeDriver(capStage)
	e := newUnregisteredEnv(t, parallelManifests(1), drv)
	ctl := &recordingController{}
	out := e.k.Run(context.Background(), Plan{Controller: ctl})
	if out.ControllerErr != nil || out.Pods != 11 || ctl.pods != 11 || ctl.finished != 1 {
		t.Fatalf("controller err %v, pods %d, prepared %d, finished %d", out.ControllerErr, out.Pods, ctl.pods, ctl.finished)
	}
	if ctl.inUseAt[0] {
		t.Error("Finish was told a torn-down volume is still in use")
	}
	if len(out.TeardownErrs) != 1 || out.TeardownErrs[0].Error() != "left on the driver" {
		t.Errorf("teardown errors %v, want Finish's", out.TeardownErrs)
	}

	drv2 := newFakeDriver(capStage)
	e2 := newUnregisteredEnv(t, parallelManifests(1), drv2)
	ctl2 := &recordingController{prepareErr: errors.New("no volume")}
	out = e2.k.Run(context.Background(), Plan{Controller: ctl2})
	if out.ControllerErr == nil || out.Pods != 0 || len(only(drv2.Calls(), "NodeStageVolume")) != 0 || ctl2.finished != 1 {
		t.Errorf("after a failed Prepare: err %v, pods %d, stage calls %d, finished %d", out.ControllerErr, out.Pods, len(only(drv2.Calls(), "NodeStageVolume")), ctl2.finished)
	}
}

// volumeInUse is true while the device is staged or a pod mounts it.
func TestVolumeInUse(t *testing.T) {
	k := &Kubelet{vm: &volumemanager.VolumeManager{State: cache.NewActualState()}}
	unique := rootdir.UniqueVolumeName("d", "h")
	if k.volumeInUse("d", "h") {
		t.Fatal("in use before anything")
	}
	k.vm.State.RecordDevice(unique, &csiplugin.VolumeSpec{Driver: "d", Handle: "h"}, nil)
	if !k.volumeInUse("d", "h") {
		t.Error("a staged device is not in use")
	}
	k.vm.State.ForgetDevice(unique)
	k.vm.State.Users[unique] = 1
	if !k.volumeInUse("d", "h") {
		t.Error("a mounted volume is not in use")
	}
}
