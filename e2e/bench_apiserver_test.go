package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkRunAPIServer: `run` of fixtures/samples/tokens (its pod's
// ServiceAccount is in it, which the API server's admission requires) with and
// without --apiserver, alternately, against one reference driver. It
// reports the wall time of each, their ratio, and the control plane's
// start-up as the run announces it (docs/apiserver.md's figures; aim: under 3 s).
// Run it with -benchtime=3x: each --apiserver run starts kube-apiserver
// and etcd.
func BenchmarkRunAPIServer(b *testing.B) {
	apiserverHelper(b)
	work := workDir(b)
	drv := startRefDriver(b, work)
	inline := sample(b, "tokens")
	var plain, api time.Duration
	var startup float64
	run := func(i int, extra ...string) time.Duration {
		root := filepath.Join(work, fmt.Sprintf("root-%d-%d", i, len(extra)))
		args := append([]string{"run", "-f", inline, "--endpoint", "unix://" + drv.Sock, "--root-dir", root, "--node-name", simNode, "-o", "json"}, extra...)
		start := time.Now()
		r := runSim(b, args...)
		d := time.Since(start)
		if r.Code != 0 {
			b.Fatalf("run failed:\n%s", r)
		}
		for _, l := range parseTrace(b, r) {
			if _, after, ok := strings.Cut(l.Text, ", up in "); ok && l.Kind == "info" {
				s, _ := strconv.ParseFloat(strings.TrimSuffix(strings.Fields(after)[0], "s"), 64)
				startup += s
			}
		}
		return d
	}
	run(-1) // warm-up: the binaries in the page cache
	run(-1, "--apiserver")
	startup = 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plain += run(i)
		api += run(i, "--apiserver")
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(plain.Seconds()*1000/n, "plain-ms/run")
	b.ReportMetric(api.Seconds()*1000/n, "apiserver-ms/run")
	b.ReportMetric(api.Seconds()/plain.Seconds(), "ratio")
	b.ReportMetric(startup*1000/n, "startup-ms")
}
