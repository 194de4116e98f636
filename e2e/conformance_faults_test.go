package e2e

// `conformance` against the reference driver with injected faults: the
// scenario that checks what the fault breaks fails with a message that says
// what the driver did, what the kubelet needed and the docs/kubelet.md section;
// the other scenarios still run; exit 1; the JUnit file parses and has one
// test case per scenario; nothing is left behind.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// cfSection matches the docs/kubelet.md section a failure message ends with.
var cfSection = regexp.MustCompile(`\(docs/kubelet\.md §[0-9]+(\.[0-9]+)?\)`)

func TestConformanceFaults(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir; mostly waiting on the driver
	// Scenarios skipped against the reference driver with refCSIDriver on
	// any host, and why: tokens go to volume_context
	// (serviceAccountTokenInSecrets unset, docs/kubelet.md §4.4); no
	// VOLUME_MOUNT_GROUP (7); attachRequired false (10); block not
	// declared (18); no node EXPAND_VOLUME (15.1).
	baseSkip := []string{"tokens/secrets", "fsgroup/volume-mount-group", "attach/publish-context", "lifecycle/block", "expansion/node"}
	// Scenarios that mount something (every one but these).
	mountless := []string{"registration/node-info", "timing/half-timeout"}
	var mounting []string
	for _, n := range conformanceScenarios {
		if !slices.Contains(mountless, n) && !slices.Contains(baseSkip, n) && n != "selinux/context-mount" {
			mounting = append(mounting, n)
		}
	}

	cases := []struct {
		name       string
		driverArgs []string // besides startRefDriver's
		faultsFile string   // written to work/faults.yaml and passed with --faults
		simArgs    []string
		// wantFail: the scenarios that must fail, each with substrings its
		// message must have. Every other scenario passes or is skipped.
		wantFail map[string][]string
		// selinuxFails: on a host without SELinux, selinux/context-mount is
		// skipped unless its (informational) mount hits the fault.
		selinuxFails bool
		// driverKeeps: the driver's data dir keeps volumes after the run
		// (it never got a successful NodeUnpublish for them).
		driverKeeps bool
	}{
		{
			// The first NodeUnpublishVolume (lifecycle/persistent's teardown)
			// fails: the kubelet keeps retrying it and the pod stays
			// Terminating (docs/kubelet.md §12).
			name:       "NodeUnpublishVolume=Internal:1",
			driverArgs: []string{"--fault", "NodeUnpublishVolume=Internal:1"},
			wantFail: map[string][]string{"lifecycle/persistent": {
				`UnmountVolume.TearDown failed for volume "conformance-pv"`,
				"code = Internal desc = injected fault NodeUnpublishVolume=Internal:1",
				"the kubelet retries the teardown forever and the pod stays Terminating (docs/kubelet.md §12)",
			}},
		},
		{
			// Every NodeUnpublishVolume fails: every scenario that publishes
			// fails at its teardown; those that mount nothing pass.
			name:       "NodeUnpublishVolume=Internal",
			driverArgs: []string{"--fault", "NodeUnpublishVolume=Internal"},
			wantFail: func() map[string][]string {
				m := map[string][]string{}
				for _, n := range mounting {
					m[n] = []string{"NodeUnpublishVolume", "code = Internal", "(docs/kubelet.md §12)"}
				}
				m["node/unpublish-removes-target"] = append(m["node/unpublish-removes-target"], "NodeUnpublishVolume of a published volume returned Internal")
				m["node/invalid-argument/NodeUnpublishVolume"] = append(m["node/invalid-argument/NodeUnpublishVolume"],
					"NodeUnpublishVolume without volume_id returned Internal", "want InvalidArgument")
				// No NodeUnstage while the pod's mount is still there.
				m["node/unstage-idempotent"] = append(m["node/unstage-idempotent"], "the volume was never unstaged", "NodeUnpublishVolume to succeed first")
				return m
			}(),
			selinuxFails: true,
			driverKeeps:  true,
		},
		{
			// A driver that unmounts and mounts again on a repeated
			// NodePublishVolume: the pod keeps the old mount and loses what
			// it wrote (docs/kubelet.md §5); a repeated call must leave the mount
			// (12).
			name:       "republish-remounts",
			driverArgs: []string{"--republish-remounts"},
			wantFail: map[string][]string{
				"republish/same-mount": {"NodePublishVolume (republish) unmounted and remounted the target: mount ID",
					"the kubelet republishes over a live mount and the pod keeps the old one (docs/kubelet.md §5)",
					"the file written into the target before the republish is gone after it"},
				"node/publish-idempotent": {"NodePublishVolume repeated replaced the mount on", "mount ID",
					"a repeated call must leave the existing mount", "(docs/kubelet.md §12)"},
			},
		},
		{
			// NodeGetInfo's topology becomes Node labels: a key with a
			// space is refused by the API server, the driver never
			// registers (docs/kubelet.md §13).
			name:       "topology-invalid-label",
			driverArgs: []string{"--topology", "bad key=x"},
			wantFail: map[string][]string{"registration/node-info": {`NodeGetInfo returned the topology key "bad key", which is not a valid label key`,
				"the kubelet copies accessible_topology.segments into the Node's labels", "(docs/kubelet.md §13)"}},
		},
		{
			// Through --faults FILE: every NodeStageVolume fails, so every
			// scenario with a PV fails at MountDevice; the inline volume is
			// never staged (docs/kubelet.md §2) and passes.
			name:       "NodeStageVolume=InvalidArgument",
			faultsFile: "- NodeStageVolume=InvalidArgument\n",
			wantFail: func() map[string][]string {
				m := map[string][]string{}
				for _, n := range mounting {
					if n != "lifecycle/ephemeral" {
						m[n] = []string{`NodeStageVolume for the persistent volume "conformance-pv" returned InvalidArgument`,
							`MountVolume.MountDevice failed for volume "conformance-pv" : rpc error: code = InvalidArgument`, "docs/kubelet.md"}
					}
				}
				return m
			}(),
		},
		{
			// Only the first NodeStageVolume fails: only lifecycle/persistent.
			name:       "NodeStageVolume=InvalidArgument:1",
			driverArgs: []string{"--fault", "NodeStageVolume=InvalidArgument:1"},
			wantFail: map[string][]string{"lifecycle/persistent": {
				`NodeStageVolume for the persistent volume "conformance-pv" returned InvalidArgument: injected fault NodeStageVolume=InvalidArgument:1 (call 1 of NodeStageVolume)`,
				"the kubelet needs it to succeed for a valid request, else the pod never starts",
				`event: MountVolume.MountDevice failed for volume "conformance-pv"`, "docs/kubelet.md"}},
		},
		{
			// A NodePublishVolume taking 1.2 s of the kubelet's 2 s timeout.
			name:       "NodePublishVolume=hang:1200ms:1",
			driverArgs: []string{"--fault", "NodePublishVolume=hang:1200ms:1"},
			simArgs:    []string{"--timeout", "2s"},
			wantFail: map[string][]string{"timing/half-timeout": {"NodePublishVolume (lifecycle/persistent) took 1.2",
				"more than half of the kubelet's 2s timeout", "treats DeadlineExceeded as uncertain", "(docs/kubelet.md §12)"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := fltWork(t)
			args := slices.Clone(tc.driverArgs)
			if tc.faultsFile != "" {
				args = append(args, "--faults", writeFile(t, work, "faults.yaml", tc.faultsFile))
			}
			drv := fltStartRef(t, work, args...)
			// One scenario after another: a fault with a call count hits
			// the scenario whose call comes first in the scenarios' order.
			c := runConformance(t, work, drv.Sock, append([]string{"-f", writeFile(t, work, "csidriver.yaml", refCSIDriver), "--parallel", "1"}, tc.simArgs...)...)

			wantCode(t, c.sim, 1)
			pass, fail, skip := c.statuses()
			wantFail := map[string][]string{}
			for n, w := range tc.wantFail {
				wantFail[n] = w
			}
			selinuxSkipped := !hostSELinux() && !tc.selinuxFails
			if hostSELinux() {
				// A bind mount drops context= (TestConformanceRefDriver).
				wantFail["selinux/context-mount"] = append(wantFail["selinux/context-mount"], "")
			} else if tc.selinuxFails {
				wantFail["selinux/context-mount"] = append(wantFail["selinux/context-mount"], "(docs/kubelet.md §12)")
			}
			var wantFailNames []string
			for n := range wantFail {
				wantFailNames = append(wantFailNames, n)
			}
			if !sameSet(fail, wantFailNames) {
				t.Errorf("failed %v, want exactly %v", sortedCopy(fail), sortedCopy(wantFailNames))
			}
			// The others still ran: they passed, or were skipped for the
			// usual reasons only.
			wantSkip := slices.Clone(baseSkip)
			if selinuxSkipped {
				wantSkip = append(wantSkip, "selinux/context-mount")
			}
			if !sameSet(skip, wantSkip) {
				t.Errorf("skipped %v, want %v", sortedCopy(skip), sortedCopy(wantSkip))
			}
			if len(pass)+len(fail)+len(skip) != len(conformanceScenarios) || !slices.Equal(c.order, conformanceScenarios) {
				t.Errorf("scenarios %v, want all of %v", c.order, conformanceScenarios)
			}
			if c.summary.Failed != len(fail) || c.summary.Result != "FAILED" {
				t.Errorf("summary failed=%d result=%q, want %d and FAILED", c.summary.Failed, c.summary.Result, len(fail))
			}
			oneLineError(t, c.sim, "scenarios failed")

			// Why: the message has what the driver did, what the kubelet
			// needed and the section; so has each structured failure.
			junitMsg := map[string]string{}
			for _, jc := range c.junit.Suites[0].Cases {
				if jc.Failure != nil {
					junitMsg[jc.Name] = jc.Failure.Message
				}
			}
			for n, wants := range tc.wantFail {
				s := c.scenarios[n]
				for _, w := range wants {
					if !strings.Contains(s.Message, w) {
						t.Errorf("%s: message does not contain %q:\n%s", n, w, s.Message)
					}
				}
				if !cfSection.MatchString(s.Message) {
					t.Errorf("%s: message names no docs/kubelet.md section:\n%s", n, s.Message)
				}
				if len(s.Failures) == 0 {
					t.Errorf("%s: no structured failures", n)
				}
				for _, f := range s.Failures {
					if f.Did == "" || f.Needed == "" || f.Section == "" {
						t.Errorf("%s: failure %+v lacks what the driver did, what the kubelet needed or the section", n, f)
					}
				}
				if m := junitMsg[n]; m == "" || !strings.Contains(m, strings.SplitN(s.Message, "\n", 2)[0]) {
					t.Errorf("%s: JUnit failure message %q does not carry the scenario's message %q", n, m, s.Message)
				}
			}

			drv.Stop()
			left, _ := os.ReadDir(filepath.Join(work, "refdata"))
			if !tc.driverKeeps && len(left) > 0 {
				t.Errorf("left in the driver's data dir: %v", left)
			}
			fltAssertClean(t, filepath.Join(work, "root"), work)
		})
	}
}
