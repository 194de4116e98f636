package csiclient

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// walkUncached is walkSecrets as it was before the per-descriptor cache:
// an extension lookup for every field of every message, kept here so
// that the benchmark compares both in the same run.
func walkUncached(m protoreflect.Message, set bool, visit func(key, val string, secret bool) string) {
	walk(m, set, visit, func(protoreflect.MessageDescriptor) secretFields {
		return secretFields{relevant: true, isSecret: isSecretField}
	})
}

// TestWalkUncachedAgrees: the benchmark's baseline redacts as the cached
// walk does.
func TestWalkUncachedAgrees(t *testing.T) {
	a, b := publishRequest(), publishRequest()
	walkUncached(a.ProtoReflect(), true, redactValue)
	redactMessage(b.ProtoReflect())
	if !proto.Equal(a, b) {
		t.Errorf("uncached %v\n  cached %v", a, b)
	}
}

// BenchmarkRedactWalk: the walk over a NodePublishVolume request (secrets,
// tokens, a capability) that finds what to redact and to collect, without
// and with the per-descriptor cache of the csi_secret option; the values
// are visited, not rewritten, so that the walk's own cost shows. The two
// run interleaved in rounds of 64 walks, so that a machine's load falls
// on both alike; ratio is uncached over cached time.
func BenchmarkRedactWalk(b *testing.B) {
	visit := func(_, val string, _ bool) string { return val }
	m := publishRequest().ProtoReflect()
	const round = 64
	var uncached, cached time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for range round {
			walkUncached(m, false, visit)
		}
		t1 := time.Now()
		for range round {
			walkSecrets(m, false, visit)
		}
		uncached += t1.Sub(t0)
		cached += time.Since(t1)
	}
	n := float64(b.N * round)
	b.ReportMetric(float64(uncached.Nanoseconds())/n, "uncached-ns/walk")
	b.ReportMetric(float64(cached.Nanoseconds())/n, "cached-ns/walk")
	b.ReportMetric(float64(uncached)/float64(cached), "ratio")
}

// BenchmarkRedactJSON: a request turned into the trace's redacted JSON,
// the whole cost per call printed.
func BenchmarkRedactJSON(b *testing.B) {
	req := publishRequest()
	b.ReportAllocs()
	for b.Loop() {
		_ = Redactor{}.JSON(req)
	}
}
