package e2e

// `conformance --read-only` against a driver that, like the secrets-store
// CSI driver, refuses a NodePublishVolume without readonly (the reference
// driver's require-readonly fault): the inline volume's scenario passes
// with --read-only and fails without it, with the driver's words.

import (
	"strings"
	"testing"
)

func TestConformanceReadOnly(t *testing.T) {
	t.Parallel() // own work dir, driver and root dir
	for _, ro := range []bool{true, false} {
		name := map[bool]string{true: "read-only", false: "read-write"}[ro]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			work := workDir(t)
			drv := startRefDriver(t, work, "--fault", "NodePublishVolume=require-readonly")
			args := []string{"-f", writeFile(t, work, "csidriver.yaml", refCSIDriver), "--focus", "^lifecycle/ephemeral$"}
			if ro {
				args = append(args, "--read-only")
			}
			c := runConformance(t, work, drv.Sock, args...)
			s := c.scenarios["lifecycle/ephemeral"]
			if ro {
				if s.Status != "pass" {
					t.Errorf("lifecycle/ephemeral with --read-only: %s: %s", s.Status, s.Message)
				}
				wantCode(t, c.sim, 0)
				return
			}
			if s.Status != "fail" || !strings.Contains(s.Message, "Readonly is not true in request") || !strings.Contains(s.Message, "InvalidArgument") {
				t.Errorf("lifecycle/ephemeral without --read-only: %s: %q; want a failure quoting the driver", s.Status, s.Message)
			}
			wantCode(t, c.sim, 1)
		})
	}
}
