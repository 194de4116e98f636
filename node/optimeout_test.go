package node

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

// One context per operation (createCSIOperationContext, docs/kubelet.md
// §12): every call of one operation (the capability questions and the call
// itself) carries the same deadline, one --timeout after the operation
// began, and the next operation gets a deadline of its own. Checked on the
// deadlines the driver received, not on durations, which a loaded machine
// stretches (the e2e test of a hang past the timeout asserts only what the
// user sees).
func TestOneDeadlinePerOperation(t *testing.T) {
	drv := csifake.New(csifake.Config{
		Name: testDriver, VendorVersion: "v1.2.3", NodeID: testNodeID,
		Capabilities: []csi.NodeServiceCapability_RPC_Type{capStage}, ManageTargets: true,
		Observe: func(ctx context.Context, _ string, _ proto.Message) any {
			d, ok := ctx.Deadline()
			if !ok {
				return time.Time{}
			}
			return d
		},
	})
	const timeout = time.Hour
	e := newEnv(t, docs(noAttachDriver, pv1, pvc1, pod1), drv, func(c *Config) { c.Timeout = timeout })
	before := time.Now()
	e.mountOK("app-1")
	after := time.Now()
	byOp := map[string]time.Time{}
	for _, c := range drv.Calls() {
		d, _ := c.Observed.(time.Time)
		if d.IsZero() {
			t.Errorf("%s:%s without a deadline", c.Labels.Operation, c.Method)
			continue
		}
		if d.Before(before.Add(timeout)) || d.After(after.Add(timeout)) {
			t.Errorf("%s:%s deadline %v, want --timeout after its operation began (within %v..%v)", c.Labels.Operation, c.Method, d, before.Add(timeout), after.Add(timeout))
		}
		if first, ok := byOp[c.Labels.Operation]; ok && !first.Equal(d) {
			t.Errorf("%s:%s deadline %v, want the operation's one deadline %v", c.Labels.Operation, c.Method, d, first)
		}
		byOp[c.Labels.Operation] = d
	}
	if len(byOp) < 2 || byOp["MountDevice"].IsZero() || byOp["MountDevice"].Equal(byOp["SetUp"]) {
		t.Errorf("deadlines by operation %v: want MountDevice and SetUp, each its own", byOp)
	}
	t.Logf("operations and their calls: %v", seq(drv.Calls()))
}
