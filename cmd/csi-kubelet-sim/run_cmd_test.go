package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// stagingDriver is the fake the staged sample talks to: it stages, and
// makes and removes its targets as a mounting driver would.
func stagingDriver() *csifake.Driver {
	return csifake.New(csifake.Config{
		Name: "ref.csi.kubelet-sim.io", VendorVersion: "0.1.0", NodeID: "n1",
		Capabilities:  []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME},
		ManageTargets: true,
	})
}

// `run` on the staged sample against the fake: the exit code, the driver's
// calls, nothing left staged or published, the root dir gone; a driver that
// fails or stops answering, with the README's exit codes.
func TestRunAgainstFake(t *testing.T) {
	const staged = "../../fixtures/samples/staged/staged.yaml"
	tests := []struct {
		name     string
		fault    func(*csifake.Driver)
		extra    []string
		wantCode int
		wantErr  string // in stderr
		want     []string
	}{
		{
			name: "clean run",
			want: []string{
				"GetPluginInfo", "NodeGetInfo",
				"NodeGetCapabilities", "NodeGetCapabilities", "NodeGetCapabilities", "NodeStageVolume",
				"NodeGetCapabilities", "NodeGetCapabilities", "NodeGetCapabilities", "NodePublishVolume",
				"NodeUnpublishVolume", "NodeGetCapabilities", "NodeUnstageVolume",
			},
		},
		{
			name:     "NodePublishVolume fails",
			fault:    func(d *csifake.Driver) { d.FailNext("NodePublishVolume", codes.Internal, 1) },
			wantCode: session.ExitFailed,
			wantErr:  "csifake: injected Internal",
		},
		{
			name:     "no answer at registration",
			fault:    func(d *csifake.Driver) { d.HangNext("NodeGetInfo", 1) },
			extra:    []string{"--timeout", "300ms"},
			wantCode: session.ExitEnvironment,
			want:     []string{"GetPluginInfo", "NodeGetInfo"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := stagingDriver()
			if tc.fault != nil {
				tc.fault(d)
			}
			sock := csifake.ServeTest(t, d)
			root := filepath.Join(t.TempDir(), "root")
			args := append([]string{"run", "-f", staged, "--endpoint", sock, "--root-dir", root, "--node-name", "n1", "-o", "json"}, tc.extra...)
			stdout, stderr, code := cli(t, "", args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			if tc.wantErr != "" && !strings.Contains(stderr+stdout, tc.wantErr) {
				t.Errorf("output does not contain %q:\n%s\n%s", tc.wantErr, stdout, stderr)
			}
			var got []string
			for _, c := range d.Calls() {
				got = append(got, c.Method)
			}
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Errorf("calls %q\nwant  %q", got, tc.want)
			}
			if len(d.Staged()) != 0 || len(d.PublishedVolumes()) != 0 {
				t.Errorf("left with the driver: staged %v, published %v", d.Staged(), d.PublishedVolumes())
			}
			if tc.wantCode == 0 {
				if _, err := os.Stat(root); !os.IsNotExist(err) {
					t.Errorf("root dir %s left: %v", root, err)
				}
			}
		})
	}
}

// `run` against a driver and `plan` with the same answers build the same
// requests, call for call: the two commands share the kubelet. Filesystem
// samples only: for a block volume `run` itself bind-mounts the device
// (MapBlockVolume), which a test may do only in a private mount namespace.
func TestRunAndPlanSendTheSameRequests(t *testing.T) {
	for _, sample := range []string{"staged/staged.yaml", "inline"} {
		t.Run(sample, func(t *testing.T) {
			path := "../../fixtures/samples/" + sample
			root := filepath.Join(t.TempDir(), "root")
			d := stagingDriver()
			sock := csifake.ServeTest(t, d)
			common := []string{"-f", path, "--root-dir", root, "--node-name", "n1", "-o", "json"}
			runOut, runErr, code := cli(t, "", append([]string{"run", "--endpoint", sock}, common...)...)
			if code != 0 {
				t.Fatalf("run: exit %d\n%s", code, runErr)
			}
			planOut, planErr, code := cli(t, "", append([]string{"plan", "--driver-name", "ref.csi.kubelet-sim.io", "--node-id", "n1",
				"--node-capabilities", "STAGE_UNSTAGE_VOLUME"}, common...)...)
			if code != 0 {
				t.Fatalf("plan: exit %d\n%s", code, planErr)
			}
			got, want := requests(t, runOut), requests(t, planOut)
			if !slices.Equal(got, want) {
				t.Errorf("run and plan differ:\nrun  %q\nplan %q", got, want)
			}
			// Not vacuous: the publish request is there, with its target.
			i := slices.IndexFunc(got, func(s string) bool { return strings.HasPrefix(s, "NodePublishVolume ") })
			if i < 0 || !strings.Contains(got[i], `"target_path":"`+root+`/pods/`) {
				t.Errorf("no NodePublishVolume with a target under the root dir in %q", got)
			}
		})
	}
}

// requests are the printed calls of a JSON trace, as "method request".
func requests(t *testing.T, jsonLines string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(jsonLines), "\n") {
		var c struct {
			Kind    string          `json:"kind"`
			Method  string          `json:"method"`
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		if c.Kind == "call" {
			out = append(out, c.Method+" "+string(c.Request))
		}
	}
	return out
}
