package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium is Debian's headless browser (`make chromium` installs it).
const chromium = "/usr/bin/chromium"

// runChromium runs the headless browser on a page with the flags that keep
// it off the network and out of the user's profile.
func runChromium(t *testing.T, extra ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
	}, extra...)
	cmd := exec.CommandContext(ctx, chromium, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// markerRE finds the #rendered marker the page's script leaves, attrRE
// its attributes.
var (
	markerRE = regexp.MustCompile(`<div id="rendered" hidden=""[^>]*>`)
	attrRE   = regexp.MustCompile(`data-([a-z-]+)="([^"]*)"`)
)

type rendered struct {
	lanes, bars, hists, svgWidth, overlaps, window, overflow, pageOverflow int
	errors                                                                 string
}

// openInChromium renders a page at 1280 pixels wide (after #hash) and
// returns the DOM and the marker.
func openInChromium(t *testing.T, file, hash string) (string, rendered) {
	t.Helper()
	dom, logs := runChromium(t, "--window-size=1280,2000", "--dump-dom", "file://"+file+hash)
	if strings.Contains(logs, "Uncaught") {
		t.Errorf("script errors in the browser:\n%s", logs)
	}
	marker := markerRE.FindString(dom)
	if marker == "" {
		t.Fatalf("the page's script did not finish (no #rendered marker); DOM starts:\n%.2000s", dom)
	}
	a := map[string]string{}
	for _, m := range attrRE.FindAllStringSubmatch(marker, -1) {
		a[m[1]] = m[2]
	}
	n := func(k string) int { v, _ := strconv.Atoi(a[k]); return v }
	return dom, rendered{lanes: n("lanes"), bars: n("bars"), hists: n("hists"), errors: a["errors"],
		svgWidth: n("svg-width"), overlaps: n("label-overlaps"), window: n("window-width"), overflow: n("overflow"), pageOverflow: n("page-overflow")}
}

// The page of a 110-pod run, opened in a real browser at 1280 pixels: its
// script ran to the end without an error; the DOM holds the header (what
// ran against what), the verdict and what was left behind, a legend of
// methods with the error mark, a lane per volume, a bar per call (failed
// ones marked, their error in the tooltip), a histogram per method whose
// axis labels do not touch; the timeline fits the window and zooms. A
// screenshot is taken too; set REPORT_SCREENSHOT=FILE.png to keep it.
func TestHTMLInChromium(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no %s (install it with `make chromium`): the page is not checked in a browser", chromium)
	}
	stats, rec := newTestStats(), NewRecorder(0)
	play(synthetic(110), stats, rec)
	sum := stats.Summary()
	hdr := Header{
		Command: "run", Driver: "ref.csi.kubelet-sim.io", DriverVersion: "0.1.0", Endpoint: "unix:///run/csi/csi.sock",
		Node: "node-1", Kubelet: "kubelet 1.37", Gates: "CSIServiceAccountTokenSecrets=true,CSIVolumeHealth=false,MutableCSINodeAllocatableCount=true,RecoverVolumeExpansionFailure=true,SELinuxChangePolicy=true,SELinuxMount=true", Failed: true,
		Verdict: `NodePublishVolume failed: rpc error: code = Internal desc = <b>disk</b> full`, LeftBehind: "nothing",
	}
	var buf bytes.Buffer
	if err := WriteHTMLWithHeader(&buf, "load: 110 pods against ref.csi.kubelet-sim.io", hdr, rec.Recorded(), sum); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, r := openInChromium(t, file, "")
	if r.lanes != 112 || r.bars != 662 || r.hists != 7 || r.errors != "" {
		t.Errorf("browser saw lanes=%d bars=%d hists=%d errors=%q; want 112 lanes, 662 bars (every call), 7 histograms, no errors", r.lanes, r.bars, r.hists, r.errors)
	}
	if r.pageOverflow > 0 {
		t.Errorf("the page is %d px wider than the 1280 px window", r.pageOverflow)
	}
	if r.window != 1280 || r.overflow > 0 {
		t.Errorf("the timeline is %d px wide in a %d px window, %d px more than its box: it should fit", r.svgWidth, r.window, r.overflow)
	}
	if r.overlaps != 0 {
		t.Errorf("%d histogram axis labels touch their neighbour", r.overlaps)
	}
	for _, want := range []string{
		`<p id="verdict" class="verdict failed">FAILED: NodePublishVolume failed: rpc error: code = Internal desc = &lt;b&gt;disk&lt;/b&gt; full</p>`,
		`<p id="left-behind"><b>Left behind:</b> nothing</p>`,
		`<td id="driver">ref.csi.kubelet-sim.io 0.1.0</td>`, `<td id="endpoint">unix:///run/csi/csi.sock</td>`,
		`<td id="node">node-1</td>`, `<td id="kubelet">kubelet 1.37</td>`, `<td id="gates">CSIServiceAccountTokenSecrets=true,CSIVolumeHealth=false,MutableCSINodeAllocatableCount=true,RecoverVolumeExpansionFailure=true,SELinuxChangePolicy=true,SELinuxMount=true</td>`,
		`<i style="background: #31a354"></i>NodePublishVolume</span>`, `<i class="err" style="background: #d62728"></i>failed or timed out (red outline)`,
		`<rect class="bar err" data-result="Internal"`, "\nerror: rpc error: code = Internal",
		`<table class="sum" id="summary">`, `<section class="hist" data-method="NodePublishVolume">`, `data-key="default/app-109 pv-109"`,
		`id="zoom-in"`,
		// A run's page tells the pod's story.
		`<g class="phase" data-phase="stage">`, `<g class="phase" data-phase="teardown">`, `id="story-legend"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered DOM has no %s", want)
		}
	}
	if strings.Contains(dom, "1 calls") || strings.Contains(dom, "1 errors") {
		t.Errorf("the page says 1 calls or 1 errors")
	}
	// Zoomed in four times, the plot is four times as wide.
	if _, z := openInChromium(t, file, "#zoom=4"); z.svgWidth < 300+4*plotWidth || z.overflow <= 0 {
		t.Errorf("zoomed 4×, the timeline is %d px wide", z.svgWidth)
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	if keep := os.Getenv("REPORT_SCREENSHOT"); keep != "" {
		shot = keep
	}
	runChromium(t, "--window-size=1280,1800", "--screenshot="+shot, "file://"+file)
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 20_000 {
		t.Errorf("screenshot %s: %v, %d bytes; want a picture of the page", shot, err, st.Size())
	}
}

// The conformance page in a browser at 1280 px: no script error, a row per
// scenario (pass, fail, skip), the failed scenario open on its calls with
// the failed call marked, the header and verdict at the top.
func TestConformanceHTMLInChromium(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no %s (install it with `make chromium`)", chromium)
	}
	rows := []ScenarioRow{
		{Name: "registration/node-info", Result: "PASS", Duration: 3 * time.Millisecond, Calls: []ScenarioCall{{Method: "NodeGetInfo", Result: "OK", Duration: time.Millisecond}}},
		{Name: "lifecycle/persistent", Result: "FAIL", Duration: 40 * time.Millisecond,
			Failures: []string{"NodeUnpublishVolume failed: Internal; the kubelet retries until it succeeds (docs/kubelet.md §1.7)"},
			Calls: []ScenarioCall{
				{Method: "NodeStageVolume", Operation: "MountDevice", Result: "OK", Duration: 5 * time.Millisecond},
				{Method: "NodeUnpublishVolume", Operation: "TearDown", Result: "Internal", Err: "rpc error: code = Internal desc = <i>busy</i>", Failed: true},
			}},
		{Name: "lifecycle/ephemeral", Result: "SKIP", Message: "no CSIDriver object given"},
	}
	// A long --feature-gates value: the page must not scroll sideways.
	hdr := Header{Driver: "ref.csi.kubelet-sim.io", DriverVersion: "0.1.0", Endpoint: "unix:///s.sock", Node: "n", Kubelet: "kubelet 1.37", Gates: longGates(), Verdict: "1 passed, 1 failed, 1 skipped", Failed: true}
	var buf bytes.Buffer
	if err := WriteConformanceHTML(&buf, "conformance: ref.csi.kubelet-sim.io", hdr, rows); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "conformance.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, logs := runChromium(t, "--window-size=1280,1000", "--dump-dom", "file://"+file)
	if strings.Contains(logs, "Uncaught") {
		t.Errorf("script errors in the browser:\n%s", logs)
	}
	for _, want := range []string{
		`data-rows="3"`, `data-failed-calls="1"`, `data-page-overflow="0"`,
		`<tr class="fail" data-scenario="lifecycle/persistent"><td class="res">FAIL</td>`,
		`<tr class="failed"><td>NodeUnpublishVolume</td>`, "&lt;i&gt;busy&lt;/i&gt;",
		`<details open="">`, `<td id="driver">ref.csi.kubelet-sim.io 0.1.0</td>`,
		`<p id="verdict" class="verdict failed">FAILED: 1 passed, 1 failed, 1 skipped</p>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered DOM has no %s", want)
		}
	}
	shot := filepath.Join(t.TempDir(), "conformance.png")
	if keep := os.Getenv("REPORT_SCREENSHOT_CONFORMANCE"); keep != "" {
		shot = keep
	}
	runChromium(t, "--window-size=1280,700", "--screenshot="+shot, "file://"+file)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
}
