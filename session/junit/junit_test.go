package junit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session/exitcode"
)

// One test case per operation on a volume; a retry that succeeded is a
// pass, an operation whose last call failed is a failure carrying it.
func TestRunJUnitCases(t *testing.T) {
	l := func(op, vol string) csiclient.Labels {
		return csiclient.Labels{Component: "kubelet", Operation: op, Volume: vol, Pod: "default/web"}
	}
	failed := status.Error(codes.Internal, "disk on fire")
	calls := []csiclient.Call{
		{Seq: 1, Labels: csiclient.Labels{Component: "registrar", Operation: "GetDriverName"}, Method: "GetPluginInfo"},
		{Seq: 2, Labels: l("MountDevice", "pv-a"), Method: "NodeGetCapabilities"},
		{Seq: 3, Labels: l("MountDevice", "pv-a"), Method: "NodeStageVolume", Err: failed, Code: codes.Internal},
		{Seq: 4, Labels: l("MountDevice", "pv-a"), Method: "NodeStageVolume"},
		{Seq: 5, Labels: l("SetUp", "pv-a"), Method: "NodePublishVolume", Err: failed, Code: codes.Internal},
		{Seq: 6, Labels: l("TearDown", "pv-a"), Method: "NodeUnpublishVolume"},
	}
	exit := exitcode.With(exitcode.Failed, errors.New("SetUp failed"))
	sink := NewSink()
	for _, c := range calls {
		sink.Call(c)
	}
	doc := Suites(sink.Operations(), node.DefaultRelease(), &node.Outcome{}, "nothing", exit, time.Second)
	var got []string
	for _, tc := range doc.Suites[0].TestCases {
		s := tc.Name
		if tc.Failure != nil {
			s += " FAIL " + tc.Failure.Message
		}
		got = append(got, s)
	}
	want := []string{
		"GetDriverName",
		"MountDevice pv-a (default/web)",
		"SetUp pv-a (default/web) FAIL NodePublishVolume: rpc error: code = Internal desc = disk on fire",
		"TearDown pv-a (default/web)",
		"result FAIL SetUp failed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("cases:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if doc.Tests != 5 || doc.Failures != 2 {
		t.Errorf("tests %d failures %d", doc.Tests, doc.Failures)
	}
}
