package docs

import (
	"strings"
	"testing"
)

// Every section heading gets GitHub's anchor, and a citation in a message
// gains the section's address at the given ref.
func TestSectionURL(t *testing.T) {
	for sec, anchor := range map[string]string{
		"1.7": "17-what-the-kubelet-removes-after-unpublish-and-unstage",
		"1.4": "14-paths-of-a-block-volume-volumemode-block",
		"4.4": "44-serviceaccounttokeninsecrets",
	} {
		if got, want := SectionURL(sec, "v1.2.3"), Repository+"/blob/v1.2.3/docs/kubelet.md#"+anchor; got != want {
			t.Errorf("§%s: %s, want %s", sec, got, want)
		}
	}
	if SectionURL("99.9", "main") != "" {
		t.Error("a section that does not exist got an address")
	}
	msg := WithLinks("see docs/kubelet.md §1.7 and docs/kubelet.md §99", "main")
	if want := "see docs/kubelet.md §1.7 <" + Repository + "/blob/main/docs/kubelet.md#17-what-the-kubelet-removes-after-unpublish-and-unstage> and docs/kubelet.md §99"; msg != want {
		t.Errorf("WithLinks:\n got %s\nwant %s", msg, want)
	}
	// Every heading with a number has an anchor.
	anchorsOnce.Do(loadAnchors)
	if len(anchors) < 50 || strings.Contains(anchors["2"], " ") {
		t.Errorf("%d anchors: %v", len(anchors), anchors["2"])
	}
}
