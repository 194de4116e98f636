package cluster

import "testing"

// A watch is in the trace when its response starts (it completes only when
// closed, after the run); every other request when it completes.
func TestParseAuditStages(t *testing.T) {
	line := func(verb, stage string) []byte {
		return []byte(`{"stage":"` + stage + `","verb":"` + verb + `","requestURI":"/apis/x/v1/things?watch=true",` +
			`"user":{"username":"system:serviceaccount:kube-system:driver"},` +
			`"objectRef":{"resource":"things","namespace":"default","apiGroup":"x","apiVersion":"v1"},` +
			`"responseStatus":{"code":200},"stageTimestamp":"2026-11-27T17:10:21.129Z"}`)
	}
	cases := []struct {
		verb, stage string
		want        bool
	}{
		{"watch", "ResponseStarted", true},
		{"watch", "ResponseComplete", false},
		{"get", "ResponseComplete", true},
		{"list", "ResponseStarted", false},
		{"create", "Panic", true},
	}
	for _, c := range cases {
		r, ok := parseAudit(line(c.verb, c.stage))
		if ok != c.want {
			t.Errorf("%s at %s: counted %v, want %v", c.verb, c.stage, ok, c.want)
			continue
		}
		if ok && (r.Verb != c.verb || r.Resource != "things" || r.Namespace != "default" || r.Code != 200) {
			t.Errorf("%s at %s: read %+v", c.verb, c.stage, r)
		}
	}
	if _, ok := parseAudit([]byte("not json")); ok {
		t.Error("a line that is not JSON counted")
	}
}
