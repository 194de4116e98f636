package report

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// The page of a 110-pod run, opened in a real browser: its script ran to
// the end without an error, and the DOM holds a lane per volume, a bar per
// call and a histogram per method. A screenshot is taken too; set
// REPORT_SCREENSHOT=FILE.png to keep it and look at it.
func TestHTMLInChromium(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no %s (install it with `make chromium`): the page is not checked in a browser", chromium)
	}
	page, sum := renderSynthetic(t, 110, 0)
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, logs := runChromium(t, "--dump-dom", "file://"+file)
	if strings.Contains(logs, "Uncaught") {
		t.Errorf("script errors in the browser:\n%s", logs)
	}
	m := regexp.MustCompile(`<div id="rendered" hidden="" data-lanes="(\d+)" data-bars="(\d+)" data-hists="(\d+)" data-errors="([^"]*)">`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's script did not finish (no #rendered marker); DOM starts:\n%.2000s", dom)
	}
	if m[1] != "112" || m[2] != "662" || m[3] != "7" || m[4] != "" {
		t.Errorf("browser saw lanes=%s bars=%s hists=%s errors=%q; want 112 lanes, 662 bars (every call), 7 histograms, no errors", m[1], m[2], m[3], m[4])
	}
	if sum.Calls != 662 {
		t.Errorf("summary has %d calls, want 662", sum.Calls)
	}
	for _, want := range []string{`<table class="sum" id="summary">`, `<section class="hist" data-method="NodePublishVolume">`, `data-key="default/app-109 pv-109"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered DOM has no %s", want)
		}
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	if keep := os.Getenv("REPORT_SCREENSHOT"); keep != "" {
		shot = keep
	}
	runChromium(t, "--window-size=1500,2400", "--screenshot="+shot, "file://"+file)
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 20_000 {
		t.Errorf("screenshot %s: %v, %d bytes; want a picture of the page", shot, err, st.Size())
	}
}
