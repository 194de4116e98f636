package e2e

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

// BenchmarkRunInline execs a full `run` of fixtures/samples/inline
// (registration, SetUp with a real bind mount, TearDown) against one
// reference driver. It reports the driver calls per run and the wall time
// per call, to compare with BenchmarkBareNodeGetCapabilities.
func BenchmarkRunInline(b *testing.B) {
	work := workDir(b)
	drv := startRefDriver(b, work)
	inline := sample(b, "inline")

	var inCallsMS float64 // the calls' own duration_ms, as the simulator measured them
	run := func(i int) int {
		root := filepath.Join(work, fmt.Sprintf("root-%d", i))
		r := runSim(b, "run", "-f", inline, "--endpoint", "unix://"+drv.Sock, "--root-dir", root,
			"--node-name", simNode, "-o", "json")
		if r.Code != 0 {
			b.Fatalf("run failed:\n%s", r)
		}
		cs := calls(parseTrace(b, r))
		for _, c := range cs {
			inCallsMS += c.DurationMS
		}
		return len(cs)
	}
	perRun := run(-1) // warm-up, and the number of calls per run
	if perRun == 0 {
		b.Fatal("no calls in the trace")
	}
	inCallsMS = 0

	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if n := run(i); n != perRun {
			b.Fatalf("run %d made %d calls, the first made %d", i, n, perRun)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	assertNothingLeft(b, filepath.Join(work, "root-0"), work)
	b.ReportMetric(float64(perRun), "calls/run")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*perRun), "ns/call")
	b.ReportMetric(inCallsMS*1e6/float64(b.N*perRun), "traced-ns/call")
}

// BenchmarkBareNodeGetCapabilities: one NodeGetCapabilities on a new gRPC
// connection per call (as the kubelet does, docs/kubelet.md §12), to the same
// reference driver: the floor for one call of the simulator.
func BenchmarkBareNodeGetCapabilities(b *testing.B) {
	work := workDir(b)
	drv := startRefDriver(b, work)
	call := func() { bareNodeGetCapabilities(b, drv.Sock) }
	call() // warm-up: the first call of a process costs more
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		call()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(1, "calls/run")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/call")
}

// BenchmarkCallOverhead is the simulator's own cost per call: the same
// NodeGetCapabilities to the same reference driver, once bare (a new gRPC
// connection, the call, close) and once the way the simulated kubelet makes
// it (csiclient.Dialer with the kubelet's dial options, the Recorder into a
// Trace, and the text and JSON printers writing the redacted call). The two
// run interleaved, so machine noise hits both alike; "x-bare" is the ratio.
func BenchmarkCallOverhead(b *testing.B) {
	work := workDir(b)
	drv := startRefDriver(b, work)
	ep, err := csiclient.ParseEndpoint("unix://" + drv.Sock)
	if err != nil {
		b.Fatal(err)
	}
	trace := csiclient.NewTrace(csiclient.NewTextPrinter(io.Discard, csiclient.Redactor{}, true, false),
		csiclient.NewJSONPrinter(io.Discard, csiclient.Redactor{}))
	traced := csi.NewNodeClient(&csiclient.Recorder{Next: &csiclient.Dialer{Endpoint: ep}, Trace: trace})
	bare := func() { bareNodeGetCapabilities(b, drv.Sock) }
	sim := func() {
		ctx, cancel := context.WithTimeout(csiclient.WithLabels(context.Background(),
			csiclient.Labels{Component: "kubelet", Operation: "MountDevice", Asking: "STAGE_UNSTAGE_VOLUME"}), 10*time.Second)
		_, err := traced.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
	bare() // warm-up
	sim()
	var bareT, simT time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		bare()
		t1 := time.Now()
		sim()
		bareT += t1.Sub(t0)
		simT += time.Since(t1)
	}
	b.StopTimer()
	if n := len(trace.Calls()); n != b.N+1 {
		b.Fatalf("%d calls in the trace, want %d", n, b.N+1)
	}
	b.ReportMetric(float64(bareT.Nanoseconds())/float64(b.N), "bare-ns/call")
	b.ReportMetric(float64(simT.Nanoseconds())/float64(b.N), "sim-ns/call")
	b.ReportMetric(float64(simT)/float64(bareT), "x-bare")
}

// bareNodeGetCapabilities is one NodeGetCapabilities on a new gRPC
// connection, closed afterwards: no trace, no printing.
func bareNodeGetCapabilities(b *testing.B, sock string) {
	conn, err := grpc.NewClient("unix://"+sock,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority("localhost"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := csi.NewNodeClient(conn).NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}); err != nil {
		b.Fatal(err)
	}
}
