package report

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// BenchmarkSinks is what Stats and Recorder cost per call, as the trace
// drives them: a Begin and a Call for Stats, a Call for the Recorder
// (which keeps the first DefaultMaxRecords and then only counts). Calls
// overlap two at a time.
func BenchmarkSinks(b *testing.B) {
	stats, rec := NewStats(), NewRecorder(DefaultMaxRecords)
	labels := csiclient.Labels{Component: "kubelet", Operation: "SetUp", Volume: "pv-1", Pod: "default/app-1"}
	b.ReportAllocs()
	var prev csiclient.Call
	i := 0
	for b.Loop() {
		c := csiclient.Call{Start: t0.Add(time.Duration(i) * time.Millisecond), Duration: 1500 * time.Microsecond,
			Method: "NodePublishVolume", Labels: labels}
		stats.Begin(c)
		if i > 0 {
			stats.Call(prev)
			rec.Call(prev)
		}
		prev = c
		i++
	}
}

type nopConn struct{}

func (nopConn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error { return nil }
func (nopConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, nil
}

// BenchmarkTrace is a call through csiclient's Recorder on a streaming
// trace, without and with the report's sinks, from concurrent goroutines
// (the load command's shape): the difference is the report's cost.
func BenchmarkTrace(b *testing.B) {
	for _, tc := range []struct {
		name  string
		sinks func() []csiclient.Sink
	}{
		{"bare", func() []csiclient.Sink { return nil }},
		{"stats+recorder+progress", func() []csiclient.Sink {
			return []csiclient.Sink{NewStats(), NewRecorder(DefaultMaxRecords), newProgress(nil, false, 0)}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			trace := csiclient.NewStreamingTrace(tc.sinks()...)
			node := csi.NewNodeClient(&csiclient.Recorder{Next: nopConn{}, Trace: trace})
			ctx := csiclient.WithLabels(context.Background(), csiclient.Labels{Component: "kubelet", Operation: "SetUp", Volume: "pv-1", Pod: "default/app-1"})
			req := &csi.NodePublishVolumeRequest{VolumeId: "vol-1", TargetPath: "/var/lib/kubelet/pods/uid/volumes/kubernetes.io~csi/pv-1/mount"}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, _ = node.NodePublishVolume(ctx, req)
				}
			})
		})
	}
}
