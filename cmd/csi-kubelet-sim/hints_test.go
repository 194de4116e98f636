package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/buildinfo"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/docs"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// An error that cites docs/kubelet.md gives the section's address too,
// at the tool's version (main for a build without a release tag).
func TestReportLinksDocs(t *testing.T) {
	var buf bytes.Buffer
	report(errors.New("volume_mount_group not sent (docs/kubelet.md §7.1)"), &buf)
	want := "(docs/kubelet.md §7.1 <" + docs.SectionURL("7.1", "main") + ">)"
	if !strings.HasSuffix(docs.SectionURL("7.1", "main"), "#71-handing-fsgroup-to-the-driver-volume_mount_group") {
		t.Errorf("§7.1's address: %s", docs.SectionURL("7.1", "main"))
	}
	if !strings.Contains(buf.String(), want) {
		t.Errorf("report: %q, want %q in it", buf.String(), want)
	}
}

func TestDocsRef(t *testing.T) {
	defer func(v string) { buildinfo.Version = v }(buildinfo.Version)
	for v, want := range map[string]string{"v1.4.0": "v1.4.0", "v1.4.0-3-gabc": "main", "dev": "main"} {
		buildinfo.Version = v
		if got := buildinfo.DocsRef(); got != want {
			t.Errorf("version %s: docs at %s, want %s", v, got, want)
		}
	}
}

// --focus and --skip complete to regexps that select one scenario each;
// --list needs no driver.
func TestConformanceFocusCompletion(t *testing.T) {
	stdout, _, _ := cli(t, "", "__complete", "conformance", "--focus", "")
	if !strings.HasPrefix(stdout, "^registration/node-info$\t") || !strings.Contains(stdout, "^lifecycle/persistent$\t") {
		t.Errorf("--focus completion: %q", stdout)
	}
	list, _, code := cli(t, "", "conformance", "--list")
	if code != 0 || strings.Count(list, "\n") != strings.Count(stdout, "\n")-1 {
		t.Errorf("--list: exit %d\n%s", code, list)
	}
	if got := (&session.ConformanceOptions{EndpointFlag: session.EndpointFlag{Endpoint: "/run/csi it.sock"}, Filenames: []string{"d.yaml"}}).RerunHint("lifecycle/persistent"); got != `csi-kubelet-sim conformance --endpoint '/run/csi it.sock' -f d.yaml --focus '^lifecycle/persistent$' -v` {
		t.Errorf("rerun hint: %s", got)
	}
}
