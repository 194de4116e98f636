package e2e

import (
	"path/filepath"
	"testing"
)

// TestPlanProvisions: `plan` on fixtures/samples/provision (a claim with a
// StorageClass and no PV) provisions and attaches as `run` does against
// the reference driver: the same CreateVolume, ControllerPublishVolume
// (but for the provisioner's identity, a time stamp),
// ControllerUnpublishVolume and DeleteVolume requests, in the same order
// (docs/kubelet.md §22, §23).
func TestPlanProvisions(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--stage-unstage", "--controller-publish")
	mf := sample(t, "provision")
	run := runSim(t, "run", "-f", mf, "--endpoint", "unix://"+drv.Sock, "--root-dir", filepath.Join(work, "root"), "--node-name", simNode, "-o", "json")
	wantCode(t, run, 0)
	plan := runSim(t, "plan", "-f", mf, "--node-name", simNode, "--node-id", "ref-node-id", "-o", "json")
	wantCode(t, plan, 0)
	rc, pc := calls(parseTrace(t, run)), calls(parseTrace(t, plan))
	controller := func(cs []traceLine) []string {
		var out []string
		for _, m := range methods(cs) {
			switch m {
			case "CreateVolume", "ControllerPublishVolume", "ControllerUnpublishVolume", "DeleteVolume":
				out = append(out, m)
			}
		}
		return out
	}
	if ok, diff := jsonEqual(controller(pc), controller(rc)); !ok {
		t.Errorf("plan's controller calls differ from run's:\n%s", diff)
	}
	for _, m := range []string{"CreateVolume", "ControllerPublishVolume", "ControllerUnpublishVolume", "DeleteVolume"} {
		got, want := callOf(t, pc, m).Request, callOf(t, rc, m).Request
		if m == "ControllerPublishVolume" {
			delete(got, "volume_context")
			delete(want, "volume_context")
		}
		if ok, diff := jsonEqual(got, want); !ok {
			t.Errorf("%s: plan's request differs from run's:\n%s", m, diff)
		}
	}
	if v := callOf(t, pc, "CreateVolume").Request["name"]; v != "pvc-5c1a2b3d-5555-4e6f-8a7b-9c0d1e2f3a4b" {
		t.Errorf("planned CreateVolume name %v", v)
	}
}
