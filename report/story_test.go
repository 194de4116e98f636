package report

import (
	"testing"
	"time"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"google.golang.org/grpc/codes"
)

// A run's calls become the pod's story: the phases in their order on the
// run's axis, the running pod from the end of publish to the start of
// teardown, a second NodePublishVolume a republish round and
// NodeGetVolumeStats stats rounds, a failed round in red.
func TestDrawStory(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	vol := csiclient.Labels{Pod: "default/p", Volume: "pv"}
	recs := []Record{
		{Method: "GetPluginInfo", Start: at(0), Duration: time.Millisecond, Labels: csiclient.Labels{Component: "registrar"}},
		{Method: "NodeGetInfo", Start: at(1), Duration: time.Millisecond},
		{Method: "NodeStageVolume", Start: at(5), Duration: 10 * time.Millisecond, Labels: vol},
		{Method: "NodePublishVolume", Start: at(20), Duration: 10 * time.Millisecond, Labels: vol},
		{Method: "NodeGetVolumeStats", Start: at(300), Duration: time.Millisecond, Labels: vol},
		{Method: "NodePublishVolume", Start: at(500), Duration: time.Millisecond, Labels: vol, Code: codes.Internal},
		{Method: "NodeUnpublishVolume", Start: at(900), Duration: 10 * time.Millisecond, Labels: vol},
		{Method: "NodeUnstageVolume", Start: at(910), Duration: 10 * time.Millisecond, Labels: vol},
	}
	s := drawStory(recs)
	var names []string
	for _, p := range s.Phases {
		names = append(names, p.Name)
	}
	if want := []string{"registration", "stage", "publish", "running", "teardown"}; !equalStrings(names, want) {
		t.Fatalf("phases %v, want %v", names, want)
	}
	running := s.Phases[3]
	if running.X != round1(float64(labelWidth)+30*float64(plotWidth)/920) || running.Title != "running: +30.0ms to +900.0ms (870.0ms)" {
		t.Errorf("running phase at %v: %s", running.X, running.Title)
	}
	if len(s.Marks) != 2 || s.Marks[0].Kind != "stats" || s.Marks[1].Kind != "republish" || s.Marks[1].Color != errorColor {
		t.Errorf("marks %+v, want a stats round then a failed republish", s.Marks)
	}
	if drawStory(nil) != nil {
		t.Error("a story without calls")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
