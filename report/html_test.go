package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
)

func renderSynthetic(t *testing.T, pods, keep int) (string, Summary) {
	t.Helper()
	stats, rec := newTestStats(), NewRecorder(keep)
	play(synthetic(pods), stats, rec)
	sum := stats.Summary()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, "load: 110 pods against ref.csi.kubelet-sim.io", rec.Recorded(), sum); err != nil {
		t.Fatal(err)
	}
	return buf.String(), sum
}

// The page holds one lane per volume (and per registration step), one
// bar per call, one histogram per method, and fetches nothing.
func TestHTMLHoldsTheRun(t *testing.T) {
	page, sum := renderSynthetic(t, 110, 0)
	for _, tc := range []struct {
		what string
		re   string
		want int
	}{
		{"lanes", `<g class="lane"`, 112},
		{"bars", `<rect class="bar[ "]`, 662},
		{"histograms", `<section class="hist"`, 7},
		{"failed bars", `data-result="Internal"`, 1},
		{"timed-out bars", `data-result="timed out"`, 1},
		{"a pod's lane", `data-key="default/app-042 pv-042"`, 1},
	} {
		if got := len(regexp.MustCompile(tc.re).FindAllString(page, -1)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.what, got, tc.want)
		}
	}
	if sum.Calls != 662 || sum.Errors != 2 || sum.TimedOut != 1 {
		t.Errorf("summary calls/errors/timed out = %d/%d/%d, want 662/2/1", sum.Calls, sum.Errors, sum.TimedOut)
	}
	// Pods start 2 ms apart and publish for about 200 ms: about 100 at once.
	if sum.MaxInFlight < 90 || sum.MaxInFlight > 110 {
		t.Errorf("max in flight = %d, want about 100", sum.MaxInFlight)
	}
	if strings.Contains(page, `id="capped"`) {
		t.Errorf("a page with every call says it is capped")
	}
	// Offline: nothing to fetch. The SVG namespace is a name, not a fetch.
	offline := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, s := range []string{"http:", "https:", "src=", "href=", "@import", "url("} {
		if strings.Contains(offline, s) {
			t.Errorf("page contains %q", s)
		}
	}
	// Pod 7's publish: method, operation, result, pod, volume, timing.
	if !regexp.MustCompile(`<title>#\d+ NodePublishVolume \(SetUp\): Internal\npod default/app-007, volume pv-007\nstarted at &#43;[0-9.]+ms, took 291.0ms\nerror: [^<]+</title>`).MatchString(page) {
		t.Errorf("no hover title for pod 7's failed publish")
	}
}

// A long run draws the first calls and says so.
func TestHTMLCapped(t *testing.T) {
	page, _ := renderSynthetic(t, 110, 100)
	if got := strings.Count(page, `<rect class="bar`); got != 100 {
		t.Errorf("bars = %d, want 100", got)
	}
	if !strings.Contains(page, "The timeline draws the first 100 of the run's 662 calls") {
		t.Errorf("the page does not say it is capped")
	}
}

// Nothing of a request, a response or an error text reaches the page,
// and names from the input are escaped.
func TestHTMLNoSecrets(t *testing.T) {
	stats, rec := newTestStats(), NewRecorder(0)
	tr := csiclient.NewStreamingTrace(stats, rec)
	tr.Note(t.Context(), false, "a step with s3cr3t-step")
	c := csiclient.Call{
		Start: t0, Duration: time.Millisecond, Method: "NodeStageVolume",
		Labels:  csiclient.Labels{Component: "kubelet", Operation: "MountDevice", Volume: "pv-1", Pod: `default/<script>alert(1)</script>`},
		Request: &csi.NodeStageVolumeRequest{VolumeId: "v", Secrets: map[string]string{"password": "s3cr3t-req"}},
		// A driver that echoes the secret in its error.
		Code: codes.PermissionDenied, Err: status.Error(codes.PermissionDenied, "bad password s3cr3t-req"),
	}
	stats.Call(c)
	rec.Call(c)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, "t", rec.Recorded(), stats.Summary()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "s3cr3t") {
		t.Errorf("the page holds a secret")
	}
	if strings.Contains(page, "<script>alert") {
		t.Errorf("a pod name reached the page unescaped")
	}
	if !strings.Contains(page, `data-result="PermissionDenied"`) {
		t.Errorf("no PermissionDenied bar")
	}
	// The error is in the tooltip, the secret it echoes stripped.
	if !strings.Contains(page, "error: rpc error: code = PermissionDenied desc = bad password ***stripped***</title>") {
		t.Errorf("no error text in the tooltip")
	}
}

func TestHTMLEmptyRun(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, "nothing", Recorded{}, newTestStats().Summary()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "0 calls") {
		t.Errorf("empty page = %s", buf.String())
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		span time.Duration
		want []string
	}{
		{900 * time.Microsecond, []string{"0", "100µs", "200µs"}},
		{2 * time.Second, []string{"0", "200.0ms", "400.0ms"}},
		{45 * time.Second, []string{"0", "5.00s", "10.0s"}},
	} {
		got := ticks(tc.span, float64(plotWidth)/float64(tc.span))
		for i, w := range tc.want {
			if got[i].Label != w {
				t.Errorf("span %v: tick %d = %s, want %s", tc.span, i, got[i].Label, w)
			}
		}
		if len(got) < 5 || len(got) > 12 {
			t.Errorf("span %v: %d ticks", tc.span, len(got))
		}
	}
}

// Many lanes get thinner, never empty: every bar keeps a visible height.
func TestHTMLManyLanes(t *testing.T) {
	page, _ := renderSynthetic(t, 500, 0)
	if got := strings.Count(page, `<g class="lane"`); got != 502 {
		t.Errorf("lanes = %d, want 502", got)
	}
	bars := regexp.MustCompile(`<rect class="bar[^"]*"[^>]* height="([0-9.]+)"`).FindAllStringSubmatch(page, -1)
	if len(bars) != 3002 {
		t.Fatalf("bars = %d, want 3002", len(bars))
	}
	for _, b := range bars {
		if b[1] != "6" {
			t.Fatalf("a bar %s px high in 8 px lanes, want 6", b[1])
		}
	}
	// The first lane is the first call's: registration, then pod 0.
	first := regexp.MustCompile(`<g class="lane" data-key="([^"]*)"`).FindAllStringSubmatch(page, 3)
	if first[0][1] != "registrar GetDriverName" || first[2][1] != "default/app-000 pv-000" {
		t.Errorf("first lanes = %q, %q; want registration then pod 0", first[0][1], first[2][1])
	}
}

// A volume's unstage (made for no pod) joins the lane of the volume's only
// pod; a volume two pods share keeps it in a lane of its own, next to
// theirs.
func TestHTMLDeviceLanes(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rec := Recorded{Records: []Record{
		{Seq: 1, Start: at(0), Duration: time.Millisecond, Method: "NodeStageVolume", Labels: csiclient.Labels{Operation: "MountDevice", Pod: "ns/a", Volume: "shared"}},
		{Seq: 2, Start: at(1), Duration: time.Millisecond, Method: "NodeStageVolume", Labels: csiclient.Labels{Operation: "MountDevice", Pod: "ns/c", Volume: "own"}},
		{Seq: 3, Start: at(2), Duration: time.Millisecond, Method: "NodePublishVolume", Labels: csiclient.Labels{Operation: "SetUp", Pod: "ns/b", Volume: "shared"}},
		{Seq: 4, Start: at(3), Duration: time.Millisecond, Method: "NodePublishVolume", Labels: csiclient.Labels{Operation: "SetUp", Pod: "ns/a", Volume: "shared"}},
		{Seq: 5, Start: at(4), Duration: time.Millisecond, Method: "NodeUnstageVolume", Labels: csiclient.Labels{Operation: "UnmountDevice", Volume: "own"}},
		{Seq: 6, Start: at(5), Duration: time.Millisecond, Method: "NodeUnstageVolume", Labels: csiclient.Labels{Operation: "UnmountDevice", Volume: "shared"}},
	}, Seen: 6}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, "t", rec, newTestStats().Summary()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range regexp.MustCompile(`<g class="lane" data-key="([^"]*)"(?s:.*?)</g>`).FindAllStringSubmatch(buf.String(), -1) {
		got = append(got, fmt.Sprintf("%s:%d", m[1], strings.Count(m[0], `<rect class="bar`)))
	}
	want := "ns/a shared:2 ns/b shared:1 shared:1 ns/c own:2"
	if strings.Join(got, " ") != want {
		t.Errorf("lanes = %s\nwant    %s", strings.Join(got, " "), want)
	}
}

// The page through the run's redactor: a header whose verdict quotes a
// driver's error (escapes, a secret in base64) and a driver version with
// a bidi override, and a call whose error is 1 MB: no raw control, no
// secret, the error cut saying its length.
func TestHTMLCleaned(t *testing.T) {
	s := csiclient.NewSensitive()
	s.Add("s3cr3t-stage")
	red := csiclient.Redactor{Sensitive: s}
	stats, rec := newTestStats(), NewRecorder(0).WithRedactor(red)
	c := csiclient.Call{
		Start: t0, Duration: time.Millisecond, Method: "NodePublishVolume",
		Labels: csiclient.Labels{Component: "kubelet", Operation: "SetUp", Volume: "pv-1", Pod: "default/p"},
		Code:   codes.Internal, Err: status.Error(codes.Internal, "\x1b]0;t\x07 czNjcjN0LXN0YWdl "+strings.Repeat("x", 1<<20)),
	}
	stats.Call(c)
	rec.Call(c)
	hdr := Header{Command: "run", Driver: "d", DriverVersion: "1.0\u202eevil", Verdict: "failed: \x1b[2J\r S3CR3T-STAGE", Failed: true}
	var buf bytes.Buffer
	if err := WriteHTMLWithHeader(&buf, "t", hdr.Cleaned(red), rec.Recorded(), stats.Summary()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, raw := range []string{"\x1b", "\x07", "\r", "\u202e", "czNjcjN0LXN0YWdl", "S3CR3T-STAGE"} {
		if strings.Contains(page, raw) {
			t.Errorf("the page holds %q", raw)
		}
	}
	if len(page) > 64<<10 || !strings.Contains(page, "bytes, cut)") || !strings.Contains(page, `1.0\u202eevil`) {
		t.Errorf("page of %d bytes, without the cut error or the escaped version", len(page))
	}
}
