package csiclient

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func publishCall() Call {
	return Call{
		Seq: 7, Start: t0.Add(time.Hour).In(time.FixedZone("X", 3600)),
		Labels:  Labels{Component: "kubelet", Operation: "SetUp", Volume: "pv-1", Pod: "default/app-1"},
		Method:  "NodePublishVolume",
		Request: &csi.NodePublishVolumeRequest{VolumeId: "vol-1", TargetPath: "/t", Secrets: map[string]string{"user": "admin"}},
		Code:    codes.InvalidArgument, Err: status.Error(codes.InvalidArgument, "bad <path>"),
		Duration: 1500 * time.Microsecond,
	}
}

// One JSON object per line, with proto field names, redacted, times in UTC;
// every record has the schema's version, calls their result.
func TestJSONPrinter(t *testing.T) {
	var buf bytes.Buffer
	p := NewJSONPrinter(&buf, Redactor{})
	p.Call(publishCall())
	p.Call(Call{
		Seq: 8, Start: t0, Labels: Labels{Component: "kubelet", Operation: "SetUp", Asking: "STAGE_UNSTAGE_VOLUME"},
		Method: "NodeGetCapabilities", Request: &csi.NodeGetCapabilitiesRequest{},
		Response: &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}}}},
	})
	p.Step(Step{Time: t0, Labels: Labels{Component: "kubelet", Operation: "MountDevice", Volume: "pv-1"}, Text: "mkdir /g", Verbose: true})
	p.Step(Step{Time: t0, Labels: Labels{Component: "simulator"}, Text: "left <x>", Warning: true})
	p.Object(map[string]any{"kind": "summary", "ok": true})
	want := strings.Join([]string{
		`{"schemaVersion":1,"kind":"call","seq":7,"time":"2026-01-02T16:04:05Z","component":"kubelet","operation":"SetUp","volume":"pv-1","pod":"default/app-1","method":"NodePublishVolume","request":{"secrets":{"user":"***stripped***"},"target_path":"/t","volume_id":"vol-1"},"code":"InvalidArgument","result":"FAILED","error":"rpc error: code = InvalidArgument desc = bad <path>","duration_ms":1.5}`,
		`{"schemaVersion":1,"kind":"call","seq":8,"time":"2026-01-02T15:04:05Z","component":"kubelet","operation":"SetUp","asking":"STAGE_UNSTAGE_VOLUME","method":"NodeGetCapabilities","request":{},"response":{"capabilities":[{"rpc":{"type":"STAGE_UNSTAGE_VOLUME"}}]},"code":"OK","result":"OK","duration_ms":0}`,
		`{"component":"kubelet","kind":"step","level":"debug","operation":"MountDevice","pod":"","schemaVersion":1,"text":"mkdir /g","time":"2026-01-02T15:04:05Z","volume":"pv-1"}`,
		`{"component":"simulator","kind":"step","level":"warning","operation":"","pod":"","schemaVersion":1,"text":"left <x>","time":"2026-01-02T15:04:05Z","volume":""}`,
		`{"kind":"summary","ok":true,"schemaVersion":1}`,
	}, "\n") + "\n"
	if got := buf.String(); got != want {
		t.Errorf("JSON lines:\n got %s\nwant %s", got, want)
	}
}

func TestTextPrinter(t *testing.T) {
	var buf bytes.Buffer
	p := NewTextPrinter(&buf, Redactor{}, false, false)
	p.Call(publishCall())
	p.Step(Step{Labels: Labels{Component: "kubelet", Operation: "SetUp"}, Text: "hidden without -v", Verbose: true})
	p.Step(Step{Labels: Labels{Component: "kubelet", Operation: "SetUp"}, Text: "shown", Warning: true})
	got := buf.String()
	want := "  7 kubelet   SetUp          NodePublishVolume          InvalidArgument      1.50ms  volume pv-1 pod default/app-1\n" +
		"      error: rpc error: code = InvalidArgument desc = bad <path>\n" +
		"      volume_id            vol-1\n" +
		"      target_path          /t\n" +
		"      readonly             false\n" +
		"      publish_context      {}\n" +
		"      volume_context       {}\n" +
		`      secrets              {"user":"***stripped***"}` + "\n" +
		"    ! [kubelet SetUp] shown\n"
	if got != want {
		t.Errorf("text:\n got %q\nwant %q", got, want)
	}

	buf.Reset()
	p = NewTextPrinter(&buf, Redactor{}, true, true)
	p.Step(Step{Labels: Labels{Component: "kubelet", Operation: "SetUp"}, Text: "shown with -v", Verbose: true})
	p.Call(Call{Seq: 1, Labels: Labels{Component: "kubelet", Operation: "SetUp", Asking: "VOLUME_MOUNT_GROUP"}, Method: "NodeGetCapabilities",
		Request: &csi.NodeGetCapabilitiesRequest{}, Response: &csi.NodeGetCapabilitiesResponse{}, Duration: time.Second})
	want = "    · [kubelet SetUp] shown with -v\n" +
		"  1 kubelet   SetUp          NodeGetCapabilities        OK                   asks VOLUME_MOUNT_GROUP -> []\n"
	if got := buf.String(); got != want {
		t.Errorf("text (verbose, planned):\n got %q\nwant %q", got, want)
	}
}

func TestRecordCode(t *testing.T) {
	rec := Redactor{}.Record(Call{Method: "NodeGetInfo"})
	if rec.Code != "OK" || rec.Error != "" || rec.Kind != "call" {
		t.Errorf("record = %+v", rec)
	}
}

func TestSortedKeys(t *testing.T) {
	got := strings.Join(SortedKeys(map[string]string{"b": "", "a": "", "c": ""}), ",")
	if got != "a,b,c" {
		t.Errorf("SortedKeys = %s", got)
	}
}

// The columns hold their widest values: a DeadlineExceeded or a
// FailedPrecondition result leaves the time and detail where an OK leaves
// them, under the header's columns.
func TestTextPrinterColumns(t *testing.T) {
	var buf bytes.Buffer
	p := NewTextPrinter(&buf, Redactor{}, false, false)
	// Long method names too (issue 32): the method column fits them all.
	methods := []string{"NodeUnpublishVolume", "ControllerUnpublishVolume", "ValidateVolumeCapabilities", "NodeGetVolumeStats"}
	for i, code := range []codes.Code{codes.OK, codes.DeadlineExceeded, codes.FailedPrecondition, codes.OK} {
		c := Call{Seq: i + 1, Start: t0, Labels: Labels{Component: "kubelet", Operation: "MountDevice"}, Method: methods[i], Code: code, Duration: time.Millisecond}
		if code != codes.OK {
			c.Err = status.Error(code, "x")
		}
		p.Call(c)
	}
	header := TraceHeader()
	col := strings.Index(header, "time")
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(line, "      ") || line == "" {
			continue
		}
		// The time, right-aligned in its 8 columns, under "time".
		if len(line) < col+8 || line[col:col+8] != "  1.00ms" {
			t.Errorf("time column moved:\n%s\n%s", header, line)
		}
	}
}
