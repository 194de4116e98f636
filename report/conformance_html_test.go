package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// longGates is a --feature-gates value as a CI passes it: one word of
// several hundred characters, with no space to break at.
func longGates() string {
	var g []string
	for i := range 40 {
		g = append(g, fmt.Sprintf("SomeLongFeatureGateName%02d=true", i))
	}
	return strings.Join(g, ",")
}

// The conformance page's feature-gates line wraps (a long value has no
// space to break at, and the page scrolled sideways at 1280 px): the
// header table's cells, and the gates cell itself, may break anywhere
// (issue 32).
func TestConformanceHTMLGatesWrap(t *testing.T) {
	var buf bytes.Buffer
	hdr := Header{Driver: "d", Kubelet: "kubelet 1.37", Gates: longGates(), Verdict: "ok"}
	if err := WriteConformanceHTML(&buf, "conformance: d", hdr, nil); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, `<td id="gates">`+hdr.Gates+`</td>`) {
		t.Fatalf("no gates cell with the gates in:\n%.3000s", page)
	}
	rules := map[string]*regexp.Regexp{
		"table.ran td overflow-wrap: anywhere": regexp.MustCompile(`table\.ran td \{[^}]*overflow-wrap: anywhere`),
		"#gates word-break: break-all":         regexp.MustCompile(`#gates \{[^}]*word-break: break-all`),
	}
	for name, re := range rules {
		if !re.MatchString(page) {
			t.Errorf("the page's style has no %s", name)
		}
	}
}
