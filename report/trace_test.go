package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// barrierConn answers a call only when n calls are in the driver at once,
// so the run has exactly n calls in flight at its peak.
type barrierConn struct {
	wg sync.WaitGroup
}

func (b *barrierConn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	b.wg.Done()
	b.wg.Wait()
	return nil
}

func (b *barrierConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, fmt.Errorf("no streams")
}

// Wired as the command wires it: a streaming trace, the sinks added to
// it, calls made concurrently through csiclient's Recorder. The trace
// keeps nothing; the stats see every call and the true peak.
func TestStatsOnAStreamingTrace(t *testing.T) {
	const pods = 40
	stats, rec := NewStats(), NewRecorder(0)
	pr := newProgress(&bytes.Buffer{}, false, pods)
	trace := csiclient.NewStreamingTrace()
	trace.AddSink(stats)
	trace.AddSink(rec)
	trace.AddSink(pr)
	conn := &barrierConn{}
	conn.wg.Add(pods)
	node := csi.NewNodeClient(&csiclient.Recorder{Next: conn, Trace: trace})
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() {
			ctx := csiclient.WithLabels(context.Background(), csiclient.Labels{
				Component: "kubelet", Operation: "SetUp", Pod: fmt.Sprintf("default/p-%d", i), Volume: fmt.Sprintf("pv-%d", i)})
			if _, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{}); err != nil {
				t.Error(err)
			}
			pr.PodMounted()
		})
	}
	wg.Wait()
	sum := stats.Summary()
	if sum.Calls != pods || sum.MaxInFlight != pods || sum.Methods[0].MaxInFlight != pods {
		t.Errorf("calls %d, in flight %d (publish %d); want %d, %d", sum.Calls, sum.MaxInFlight, sum.Methods[0].MaxInFlight, pods, pods)
	}
	if trace.Calls() != nil {
		t.Errorf("the streaming trace kept calls")
	}
	if got := rec.Recorded(); len(got.Records) != pods || got.Seen != pods {
		t.Errorf("recorder kept %d of %d", len(got.Records), got.Seen)
	}
	if pr.calls.Load() != pods || pr.mounted.Load() != pods {
		t.Errorf("progress counted %d calls, %d pods", pr.calls.Load(), pr.mounted.Load())
	}
	if len(stats.all.pending) != 0 {
		t.Errorf("%d events held after every call ended", len(stats.all.pending))
	}
}

// Example use by a command: sinks on the trace, the line while it runs,
// the text (or JSON) and the page at the end.
func Example() {
	stats, rec := NewStats(), NewRecorder(DefaultMaxRecords)
	trace := csiclient.NewStreamingTrace(stats, rec)
	progress := NewProgress(os.Stdout, 110) // draws only on a terminal
	trace.AddSink(progress)

	// ... the kubelet runs with &csiclient.Recorder{Next: conn, Trace: trace},
	// calling progress.PodMounted() and progress.PodTornDown() ...
	time.Sleep(0)

	progress.Stop()
	sum := stats.Summary()
	_ = sum.WriteText(os.Stdout) // or sum.WriteJSON for -o json
	var page bytes.Buffer        // the --report FILE.html
	_ = WriteHTML(&page, "load: 110 pods", rec.Recorded(), sum)
}

// Constant memory: after warming up, another 100,000 calls through a
// streaming trace with every report sink add next to nothing that stays.
func TestMemoryStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 calls")
	}
	trace := csiclient.NewStreamingTrace(NewStats(), NewRecorder(1000), newProgress(nil, false, 0))
	node := csi.NewNodeClient(&csiclient.Recorder{Next: nopConn{}, Trace: trace})
	run := func(n int) {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range n / 4 {
					ctx := csiclient.WithLabels(context.Background(), csiclient.Labels{
						Component: "kubelet", Operation: "SetUp", Pod: fmt.Sprintf("default/p-%d-%d", g, i), Volume: "pv"})
					_, _ = node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v"})
				}
			})
		}
		wg.Wait()
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	run(20000)
	before := heap()
	run(100000)
	after := heap()
	runtime.KeepAlive(trace) // measured while the trace is alive
	// A kept trace grows by about 40 MB here. The sweep holds the events
	// of calls that overlap the oldest call in flight, which a goroutine
	// descheduled mid-call can stretch for a while: allow a few MB.
	if after > before+4<<20 {
		t.Errorf("heap grew from %d to %d bytes over 100,000 calls; want flat", before, after)
	}
	t.Logf("heap %d -> %d bytes over 100,000 calls", before, after)
}
