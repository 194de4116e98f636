package csiclient

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// walkUncached is walkSecrets as it was before the per-descriptor cache:
// an extension lookup for every field of every message, kept here so
// that the benchmark compares both in the same run.
func walkUncached(m protoreflect.Message, set bool, visit func(key, val string, secret bool) string) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		secret := isSecretField(fd)
		switch {
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind:
			mv := v.Map()
			mv.Range(func(k protoreflect.MapKey, val protoreflect.Value) bool {
				out := visit(k.String(), val.String(), secret)
				if set {
					mv.Set(k, protoreflect.ValueOfString(out))
				}
				return true
			})
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			l := v.List()
			for i := range l.Len() {
				walkUncached(l.Get(i).Message(), set, visit)
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			walkUncached(v.Message(), set, visit)
		case fd.Kind() == protoreflect.StringKind && secret:
			out := visit("", v.String(), true)
			if set {
				m.Set(fd, protoreflect.ValueOfString(out))
			}
		}
		return true
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
// are visited, not rewritten, so that the walk's own cost shows. The
// ratio of the two is the cache's gain.
func BenchmarkRedactWalk(b *testing.B) {
	visit := func(_, val string, _ bool) string { return val }
	for _, bc := range []struct {
		name string
		walk func(protoreflect.Message, bool, func(string, string, bool) string)
	}{{"uncached", walkUncached}, {"cached", walkSecrets}} {
		b.Run(bc.name, func(b *testing.B) {
			m := publishRequest().ProtoReflect()
			b.ReportAllocs()
			for b.Loop() {
				bc.walk(m, false, visit)
			}
		})
	}
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
