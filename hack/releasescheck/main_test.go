package main

import (
	"reflect"
	"strings"
	"testing"
)

const claimedText = `# comment
v1.36.3
v1.37.2
v1.38.0-beta.0
`

func TestNews(t *testing.T) {
	claimed, err := parseClaimed(claimedText)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		served string
		want   []finding
	}{
		"nothing new": {"k8s.io/kubernetes v1.36.1 v1.36.3 v1.37.0 v1.37.2 v1.38.0-alpha.1 v1.38.0-beta.0", nil},
		"a newer patch": {"k8s.io/kubernetes v1.36.3 v1.37.2 v1.37.3 v1.38.0-beta.0",
			[]finding{{"v1.37.3: a newer patch of 1.37 (claimed v1.37.2)", "f line 3: v1.37.2 -> v1.37.3"}}},
		"a newer pre-release": {"k8s.io/kubernetes v1.36.3 v1.37.2 v1.38.0-beta.0 v1.38.0-beta.1 v1.38.0-rc.0",
			[]finding{{"v1.38.0-rc.0: a newer pre-release of 1.38 (claimed v1.38.0-beta.0)", "f line 4: v1.38.0-beta.0 -> v1.38.0-rc.0"}}},
		"1.38.0 ships": {"k8s.io/kubernetes v1.36.3 v1.37.2 v1.38.0-beta.0 v1.38.0-rc.0 v1.38.0",
			[]finding{{"v1.38.0: 1.38 has shipped (claimed: the pre-release v1.38.0-beta.0)", "f line 4: v1.38.0-beta.0 -> v1.38.0"}}},
		"a new minor": {"k8s.io/kubernetes v1.36.3 v1.37.2 v1.38.0-beta.0 v1.39.0-alpha.0 v1.39.0-alpha.1",
			[]finding{{"v1.39.0-alpha.1: a new minor, as a pre-release", "f: a line v1.39.0-alpha.1 after v1.38.0-beta.0"}}},
		"a claimed tag not served": {"k8s.io/kubernetes v1.36.3 v1.38.0-beta.0",
			[]finding{{"v1.37.2 is claimed but the proxy does not serve it", "f line 3: a tag the proxy serves"}}},
	} {
		if got := news("f", claimed, parseServed(c.served)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, c.want)
		}
	}
}

func TestReport(t *testing.T) {
	claimed, _ := parseClaimed(claimedText)
	var b strings.Builder
	report(&b, "node/release/releases.txt", claimed, parseServed("k8s.io/kubernetes v1.36.3 v1.37.2 v1.38.0-beta.0 v1.38.0"))
	if out := b.String(); !strings.Contains(out, "change: node/release/releases.txt line 4: v1.38.0-beta.0 -> v1.38.0") {
		t.Errorf("report:\n%s", out)
	}
	if _, err := parseClaimed("v1.38\n"); err == nil {
		t.Errorf("a malformed tag accepted")
	}
}
