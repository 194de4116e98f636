package e2e

// The first command of the README, `run --endpoint ...` with no files,
// against drivers that make their own volumes (issue 32): the default
// pod's volume is provisioned as a claim of a StorageClass is
// (docs/kubelet.md §22: CreateVolume, the PV, the node calls with the
// created handle, DeleteVolume after the pod) when the driver's
// controller offers CREATE_DELETE_VOLUME; a made-up handle otherwise.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// defaultPodRun runs the default pod and returns the calls by method
// and the default pod's notes.
func defaultPodRun(t *testing.T, command string, args ...string) (simResult, []traceLine, []string) {
	t.Helper()
	r := runSim(t, append([]string{command, "--node-name", simNode, "-o", "json"}, args...)...)
	lines := parseTrace(t, r)
	var notes []string
	for _, l := range lines {
		if l.Kind == "step" && l.Component == "default pod" {
			notes = append(notes, l.Text)
		}
	}
	return r, calls(lines), notes
}

// handlesOf is the volume_id of each call of method.
func handlesOf(cs []traceLine, method string) []string {
	var out []string
	for _, c := range cs {
		if c.Method == method {
			id, _ := c.Request["volume_id"].(string)
			out = append(out, id)
		}
	}
	return out
}

// TestDefaultPodProvisioned: the reference driver refusing volumes it did
// not create (--strict-volumes) and the Kubernetes mock driver both run
// the default pod: exit 0, the node calls get the handle CreateVolume
// answered, DeleteVolume of it comes last, nothing is left. Before the
// change both answered NodeStageVolume of sim-volume-1 with NotFound.
func TestDefaultPodProvisioned(t *testing.T) {
	strict := func(t *testing.T, work string) *driverProc { return startRefDriver(t, work, "--strict-volumes") }
	cases := []struct {
		name  string
		start func(t *testing.T, work string) *driverProc
		extra []string
	}{
		{"refdriver", strict, nil},
		{"mock", func(t *testing.T, work string) *driverProc { return startMock(t, work) }, nil},
		// The claim and its class are created through the API server,
		// so that the provisioner's PV binds the claim it has.
		{"refdriver-apiserver", strict, []string{"--apiserver"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.extra) > 0 {
				apiserverHelper(t)
			}
			t.Parallel()
			work := workDir(t)
			drv := tc.start(t, work)
			root := filepath.Join(work, "root")
			r, cs, notes := defaultPodRun(t, "run", append([]string{"--endpoint", "unix://" + drv.Sock, "--root-dir", root}, tc.extra...)...)
			wantCode(t, r, 0)
			assertNothingLeft(t, root, work)
			if len(notes) != 1 || !strings.Contains(notes[0], "offers CREATE_DELETE_VOLUME") || !strings.Contains(notes[0], "is provisioned") {
				t.Errorf("the trace should say the default volume is provisioned and why, notes: %q", notes)
			}
			var created string
			for _, c := range cs {
				if c.Method == "CreateVolume" {
					vol, _ := c.Response["volume"].(map[string]any)
					created, _ = vol["volume_id"].(string)
				}
			}
			if created == "" || created == "sim-volume-1" {
				t.Fatalf("no CreateVolume answered a handle (got %q); calls %v", created, methods(cs))
			}
			for _, m := range []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume", "DeleteVolume"} {
				if got := handlesOf(cs, m); len(got) != 1 || got[0] != created {
					t.Errorf("%s volume_ids %q, want [%q]", m, got, created)
				}
			}
			ms := methods(cs)
			if ms[len(ms)-1] != "DeleteVolume" || slices.Index(ms, "CreateVolume") > slices.Index(ms, "NodeStageVolume") {
				t.Errorf("want CreateVolume before the node calls and DeleteVolume last: %v", ms)
			}
		})
	}
}

// TestDefaultPodVolumeHandle: --volume-handle keeps the PV with that
// handle (today's path), and the trace says so; the strict driver refuses
// it, and the error says the driver does not know the volume.
func TestDefaultPodVolumeHandle(t *testing.T) {
	work := workDir(t)
	drv := startRefDriver(t, work, "--strict-volumes")
	root := filepath.Join(work, "root")
	r, cs, notes := defaultPodRun(t, "run", "--endpoint", "unix://"+drv.Sock, "--root-dir", root, "--volume-handle", "sim-volume-1")
	wantCode(t, r, 1)
	assertNothingLeft(t, root, work)
	if len(notes) != 1 || !strings.Contains(notes[0], "--volume-handle given") || !strings.Contains(notes[0], `"sim-volume-1"`) {
		t.Errorf("notes %q", notes)
	}
	if slices.Contains(methods(cs), "CreateVolume") {
		t.Errorf("--volume-handle should not provision: %v", methods(cs))
	}
	if got := handlesOf(cs, "NodeStageVolume"); !slices.Equal(got, []string{"sim-volume-1"}) {
		t.Errorf("NodeStageVolume volume_ids %q", got)
	}
	if !strings.Contains(r.Stderr, `does not know volume "sim-volume-1"`) {
		t.Errorf("the error should name the unknown volume\n%s", r)
	}
}

// TestPlanDefaultPodProvisioned: plan follows --controller-capabilities:
// with CREATE_DELETE_VOLUME (its default) the default volume is planned
// as provisioned, without it the made-up handle stays.
func TestPlanDefaultPodProvisioned(t *testing.T) {
	work := workDir(t)
	root := filepath.Join(work, "root")
	r, cs, notes := defaultPodRun(t, "plan", "--driver-name", refDriverName, "--root-dir", root)
	wantCode(t, r, 0)
	if len(notes) != 1 || !strings.Contains(notes[0], "offers CREATE_DELETE_VOLUME") {
		t.Errorf("notes %q", notes)
	}
	ms := methods(cs)
	if !slices.Contains(ms, "CreateVolume") || ms[len(ms)-1] != "DeleteVolume" {
		t.Errorf("plan should provision the default volume: %v", ms)
	}
	if got := handlesOf(cs, "NodeStageVolume"); len(got) != 1 || got[0] == "sim-volume-1" {
		t.Errorf("NodeStageVolume volume_ids %q, want the created one", got)
	}

	r, cs, notes = defaultPodRun(t, "plan", "--driver-name", refDriverName, "--root-dir", root, "--controller-capabilities", "PUBLISH_UNPUBLISH_VOLUME")
	wantCode(t, r, 0)
	if len(notes) != 1 || !strings.Contains(notes[0], "does not offer CREATE_DELETE_VOLUME") {
		t.Errorf("notes %q", notes)
	}
	if slices.Contains(methods(cs), "CreateVolume") {
		t.Errorf("without CREATE_DELETE_VOLUME nothing is provisioned: %v", methods(cs))
	}
	if got := handlesOf(cs, "NodeStageVolume"); !slices.Equal(got, []string{"sim-volume-1"}) {
		t.Errorf("NodeStageVolume volume_ids %q", got)
	}
	assertNothingLeft(t, root, work)
}
