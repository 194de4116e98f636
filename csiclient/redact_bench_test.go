package csiclient

import (
	"encoding/json"
	"strconv"
	"strings"
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

// scrubSecrets are the values the Scrub benchmark collects: a publish
// request's (with its tokens) and the secrets sample's two.
func scrubSecrets() *Sensitive {
	s := NewSensitive()
	s.Call(Call{Request: publishRequest()})
	s.Add("s3cr3t-stage")
	s.Add("publish-secret")
	return s
}

// scrubInputs are texts a run scrubs: a driver's one-line error, a
// trace's JSON line of a publish call, and a multi-line error of 64 KB.
func scrubInputs() []string {
	line := string(Redactor{ShowSecrets: true}.JSON(publishRequest()))
	long := strings.Repeat("rpc error: code = Internal desc = mount failed: exit status 32\n", 1024)
	return []string{
		"rpc error: code = Internal desc = mount of vol-1 at /var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/pv/mount failed",
		line,
		long,
	}
}

// plainScrub is Scrub as it was before the encoded forms: the values as
// is and quoted (JSON, Go, Printable), then the JWT pattern; kept so
// that the benchmark compares both in the same run.
func plainScrub(values []string) func(string) string {
	var pairs []string
	for _, v := range values {
		b, _ := json.Marshal(v)
		for _, f := range []string{v, Printable(v), strings.Trim(strconv.Quote(v), `"`), strings.Trim(string(b), `"`)} {
			pairs = append(pairs, f, Stripped)
		}
	}
	r := strings.NewReplacer(pairs...)
	return func(text string) string {
		text = r.Replace(text)
		if strings.Contains(text, "eyJ") {
			text = jwtPattern.ReplaceAllStringFunc(text, TokenFingerprint)
		}
		return text
	}
}

// BenchmarkScrub: the texts of scrubInputs scrubbed of the run's secrets
// in every form (Sensitive.Scrub), against plainScrub with the same
// values, interleaved in rounds as BenchmarkRedactWalk is; ratio is the
// time of Scrub over plainScrub's.
func BenchmarkScrub(b *testing.B) {
	s := scrubSecrets()
	old := plainScrub([]string{"admin", "hunter2", tokensJSON, "s3cr3t-stage", "publish-secret"})
	texts := scrubInputs()
	const round = 16
	var before, after time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for range round {
			for _, t := range texts {
				_ = old(t)
			}
		}
		t1 := time.Now()
		for range round {
			for _, t := range texts {
				_ = s.Scrub(t)
			}
		}
		before += t1.Sub(t0)
		after += time.Since(t1)
	}
	n := float64(b.N * round)
	b.ReportMetric(float64(before.Nanoseconds())/n, "plain-ns/op")
	b.ReportMetric(float64(after.Nanoseconds())/n, "forms-ns/op")
	b.ReportMetric(float64(after)/float64(before), "ratio")
}
