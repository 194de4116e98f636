package printers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/conformance"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/node"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/session"
)

// summaryOf is a run of one staged volume that published, and a failed
// exit when failed.
func summaryOf(t *testing.T, failed bool) *session.Summary {
	t.Helper()
	r, err := node.NewRelease(node.DefaultVersion.String(), "")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	s := &session.Summary{
		Command: "run",
		Outcome: &node.Outcome{Pods: 1, Results: []*node.PodResult{{Pod: pod, Volumes: []node.VolumeResult{{
			PodVolume: "data", SpecName: "pv-1", Mode: "Persistent", TargetPath: "/root/pods/uid/volumes/kubernetes.io~csi/pv-1/mount",
			StagingPath: "/root/plugins/kubernetes.io/csi/drv/abc/globalmount", Published: true,
		}}}}},
		Calls: 9, FailedCalls: 0, DriverTime: 3 * time.Millisecond, Elapsed: 40 * time.Millisecond,
		Release: r, RootDir: "/root",
	}
	if failed {
		s.FailedCalls = 1
		s.Exit = session.WithCode(session.ExitFailed, errors.New("NodePublishVolume failed"))
	}
	return s
}

// The text summary names the volume, the calls and the result; a failed
// run points at stderr with its exit code.
func TestSessionSummaryText(t *testing.T) {
	for _, tc := range []struct {
		failed bool
		want   []string
	}{
		{false, []string{"\nsummary\n", "  volume      default/web/data published (pv-1, Persistent, staged) -> /root/pods/", "  calls       9 to the driver, 0 failed", "  left behind nothing\n", "  result      OK\n"}},
		{true, []string{"  calls       9 to the driver, 1 failed", "  result      FAILED (exit 1: the error is on stderr)\n"}},
	} {
		var out bytes.Buffer
		p := NewSession(&out, io.Discard, false, 0)
		p.Begin(session.Begin{Redactor: csiclient.Redactor{}, PrintCalls: true})
		p.Summary(summaryOf(t, tc.failed))
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("failed=%v: no %q in\n%s", tc.failed, w, out.String())
			}
		}
	}
}

// -o json: one summary object with the exit code and the volumes.
func TestSessionSummaryJSON(t *testing.T) {
	var out bytes.Buffer
	p := NewSession(&out, io.Discard, true, 0)
	p.Begin(session.Begin{Redactor: csiclient.Redactor{}, PrintCalls: true})
	p.Summary(summaryOf(t, true))
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	vols, _ := m["volumes"].([]any)
	if m["kind"] != "summary" || m["result"] != "FAILED" || m["exit_code"] != float64(1) || len(vols) != 1 || m["error"] != "NodePublishVolume failed" {
		t.Errorf("summary object %v", m)
	}
	if _, ok := m["provisioned"]; ok {
		t.Errorf("a run without sidecars has no provisioned: %v", m)
	}
}

// A quiet session (load without -v) prints no trace header and gives no
// sink for the calls.
func TestSessionQuiet(t *testing.T) {
	var out bytes.Buffer
	p := NewSession(&out, io.Discard, false, 0)
	if pr := p.Begin(session.Begin{Redactor: csiclient.Redactor{}}); pr.Calls != nil || pr.Tokens != nil {
		t.Errorf("quiet session printing %+v", pr)
	}
	r, err := node.NewRelease(node.DefaultVersion.String(), "")
	if err != nil {
		t.Fatal(err)
	}
	p.Header(session.Header{Command: "load", Release: r, NodeName: "n1", RootDir: "/r", SELinuxWhy: "off"})
	if strings.Contains(out.String(), csiclient.TraceHeader()) || !strings.Contains(out.String(), `csi-kubelet-sim load: `) {
		t.Errorf("header:\n%s", out.String())
	}
}

// The conformance summary names the files the run wrote, in text and JSON.
func TestConformanceSummaryNamesFiles(t *testing.T) {
	rep := &conformance.Report{Driver: &conformance.DriverInfo{Name: "ref.csi"}, Results: []conformance.Result{{Name: "lifecycle/inline", Status: conformance.Pass}}}
	files := session.ConformanceFiles{JUnit: "out/junit.xml", Report: "out/report.html"}
	var text bytes.Buffer
	NewConformance(&text, io.Discard, false, 0).Summary(rep, files)
	for _, want := range []string{"  junit       out/junit.xml\n", "  report      out/report.html\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	NewConformance(&js, io.Discard, true, 0).Summary(rep, files)
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil {
		t.Fatalf("%v: %s", err, js.String())
	}
	if m["junit"] != "out/junit.xml" || m["report"] != "out/report.html" {
		t.Errorf("JSON summary: junit %v, report %v", m["junit"], m["report"])
	}
	text.Reset()
	NewConformance(&text, io.Discard, false, 0).Summary(rep, session.ConformanceFiles{})
	if strings.Contains(text.String(), "junit") || strings.Contains(text.String(), "report") {
		t.Errorf("a summary with no files names one:\n%s", text.String())
	}
}
