package mocklog

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// The testdata logs were captured from bin/csi-mock-driver -v=3 (see
// e2e/mockdriver/README.md), driven by a throwaway client:
//   attach.log:   default flags (attach enabled, node ID = hostname "vm")
//   noattach.log: --disable-attach --node-id=
//   nostage.log:  --disable-attach --disable-node-stage --single-node-multi-writer
//                 --volume-mount-group --node-expansion --node-volume-condition
//                 --attach-limit=7 --enable-topology

func parseFile(t *testing.T, name string) []Call {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	calls, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return calls
}

func methods(calls []Call) []string {
	var m []string
	for _, c := range calls {
		m = append(m, c.Method)
	}
	return m
}

func TestParseAttach(t *testing.T) {
	calls := parseFile(t, "attach.log")
	want := []string{
		"GetPluginInfo", "GetPluginCapabilities", "NodeGetCapabilities", "NodeGetInfo",
		"NodeStageVolume", "NodeStageVolume", "ControllerPublishVolume", "NodeStageVolume",
		"NodePublishVolume", "NodePublishVolume", "NodeGetVolumeStats", "NodeUnpublishVolume",
		"NodeUnstageVolume", "NodeUnpublishVolume", "NodeUnstageVolume",
		"ControllerUnpublishVolume", "ControllerPublishVolume",
	}
	if got := methods(calls); !reflect.DeepEqual(got, want) {
		t.Fatalf("methods:\n got %q\nwant %q", got, want)
	}
	// The first line (start-up message) is not a call.
	if calls[0].Line != 2 || calls[0].FullMethod != "/csi.v1.Identity/GetPluginInfo" {
		t.Errorf("first call: line %d, full method %q", calls[0].Line, calls[0].FullMethod)
	}

	// NodeGetCapabilities: oneof under its Go name, enums as numbers, UNKNOWN (0) omitted.
	caps := calls[2].Response.(map[string]any)["capabilities"].([]any)
	var types []any
	for _, c := range caps {
		types = append(types, c.(map[string]any)["Type"].(map[string]any)["Rpc"].(map[string]any)["type"])
	}
	if want := []any{nil, 1.0, 2.0}; !reflect.DeepEqual(types, want) {
		t.Errorf("capability types: got %v, want %v", types, want)
	}
	if id := calls[3].Response.(map[string]any)["node_id"]; id != "vm" {
		t.Errorf("NodeGetInfo node_id = %v", id)
	}

	// NodeStage without publish_context["device"] fails with InvalidArgument.
	c := calls[4]
	if c.OK() || c.Code != 3 || c.Message != "stage volume info 'device' key required" ||
		c.Error != "rpc error: code = InvalidArgument desc = stage volume info 'device' key required" || c.Response != nil {
		t.Errorf("NodeStage without device: %+v", c)
	}
	// Unknown volume id: NotFound.
	if c := calls[5]; c.Code != 5 || c.Str("volume_id") != "pv-handle-xyz" {
		t.Errorf("NodeStage unknown id: %+v", c)
	}

	// Successful NodeStage: every field readable.
	c = calls[7]
	if !c.OK() || c.Code != 0 || !reflect.DeepEqual(c.Response, map[string]any{}) {
		t.Errorf("NodeStage: %+v", c)
	}
	for path, want := range map[string]string{
		"volume_id":                                  "1",
		"staging_target_path":                        "/tmp/mockclient-dirs/staging/globalmount",
		"publish_context/device":                     "/dev/mock",
		"secrets/password":                           "s3cr3t",
		"volume_context/foo":                         "bar",
		"volume_capability/AccessType/Mount/fs_type": "ext4",
		"volume_capability/AccessType/Mount/volume_mount_group": "1000",
	} {
		if got := c.Str(strings.Split(path, "/")...); got != want {
			t.Errorf("NodeStage %s = %q, want %q", path, got, want)
		}
	}
	if m := c.Get("volume_capability", "access_mode", "mode"); m != 1.0 {
		t.Errorf("access_mode.mode = %v", m)
	}
	if f := c.Get("volume_capability", "AccessType", "Mount", "mount_flags"); !reflect.DeepEqual(f, []any{"ro"}) {
		t.Errorf("mount_flags = %v", f)
	}

	// NodePublish, then a read-only re-publish rejected with AlreadyExists.
	if c := calls[8]; !c.OK() || c.Str("target_path") != "/tmp/mockclient-dirs/pods/mount" || c.Get("readonly") != nil {
		t.Errorf("NodePublish: %+v", c)
	}
	if c := calls[9]; c.Code != 6 || c.Get("readonly") != true {
		t.Errorf("NodePublish readonly: %+v", c)
	}
	// Large int64 fields arrive as float64.
	usage := calls[10].Response.(map[string]any)["usage"].([]any)[0].(map[string]any)
	if usage["total"] != float64(100<<30) || usage["unit"] != 1.0 {
		t.Errorf("usage = %v", usage)
	}
	if got := len(Filter(calls, "NodeUnpublishVolume", "NodeUnstageVolume")); got != 4 {
		t.Errorf("Filter: %d calls", got)
	}
}

func TestParseNoAttach(t *testing.T) {
	calls := parseFile(t, "noattach.log")
	if len(calls) != 17 {
		t.Fatalf("%d calls: %q", len(calls), methods(calls))
	}
	if c := calls[4]; c.Method != "ControllerPublishVolume" || c.Code != 12 {
		t.Errorf("ControllerPublish with --disable-attach: %+v", c)
	}
	cv := Filter(calls, "CreateVolume")[0]
	if id := cv.Response.(map[string]any)["volume"].(map[string]any)["volume_id"]; id != "4" {
		t.Errorf("CreateVolume volume_id = %v", id)
	}
	pubs := Filter(calls, "NodePublishVolume")
	if _, ok := pubs[0].Get("volume_capability", "AccessType", "Block").(map[string]any); !ok {
		t.Errorf("block publish: %s", pubs[0].Raw)
	}
	if pubs[0].Get("volume_capability", "access_mode", "mode") != 7.0 { // SINGLE_NODE_MULTI_WRITER
		t.Errorf("block publish mode: %s", pubs[0].Raw)
	}
	if c := pubs[1]; c.Code != 13 || !strings.Contains(c.Message, "could not create target dir") {
		t.Errorf("publish with missing parent: %+v", c)
	}
	if c := pubs[2]; !c.OK() || c.Str("volume_context", "csi.storage.k8s.io/ephemeral") != "true" {
		t.Errorf("ephemeral publish: %+v", c)
	}
}

func TestParseNoStage(t *testing.T) {
	calls := parseFile(t, "nostage.log")
	want := []string{"GetPluginInfo", "GetPluginCapabilities", "NodeGetCapabilities", "NodeGetInfo",
		"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume"}
	if got := methods(calls); !reflect.DeepEqual(got, want) {
		t.Fatalf("methods %q", got)
	}
	if c := calls[4]; c.Code != 12 || c.OK() {
		t.Errorf("NodeStage with --disable-node-stage: %+v", c)
	}
	info := calls[3].Response.(map[string]any)
	if info["max_volumes_per_node"] != 7.0 {
		t.Errorf("NodeGetInfo: %v", info)
	}
}

func TestParseEdgeCases(t *testing.T) {
	in := strings.Join([]string{
		"some unrelated line",
		`gRPCCall: {"Method":"/csi.v1.Identity/Probe","Request":{},"Response":{"ready":{"value":true}},"Error":"","FullError":null}`, // -skip_headers
		`I0101 00:00:00.000000 1 main.go:1] gRPCCall: {"Method":"/csi.v1.Node/NodeGetInfo","Request":null,"Response":null,"Error":"boom","FullError":{}}` + "\r",
		"",
	}, "\n")
	calls, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].Method != "Probe" || calls[0].Line != 2 || !calls[0].OK() {
		t.Fatalf("calls: %+v", calls)
	}
	// The mock package's own interceptor logs FullError as {}: Code stays 0 but OK() is false.
	if c := calls[1]; c.OK() || c.Code != 0 || c.Error != "boom" || c.Request == nil {
		t.Errorf("call 2: %+v", c)
	}

	calls, err = Parse(strings.NewReader("x\n" + `gRPCCall: {"Method":"/csi.v1.Identity/Probe"}` + "\n" + `gRPCCall: {"Method":` + "\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") || len(calls) != 1 {
		t.Errorf("truncated line: calls %d, err %v", len(calls), err)
	}

	calls, err = Parse(strings.NewReader(""))
	if err != nil || len(calls) != 0 {
		t.Errorf("empty: %v %v", calls, err)
	}

	// Lines longer than bufio's default 64 KiB.
	big := strings.Repeat("x", 1<<20)
	calls, err = Parse(strings.NewReader(`gRPCCall: {"Method":"/csi.v1.Node/NodeStageVolume","Request":{"secrets":{"k":"` + big + `"}}}`))
	if err != nil || len(calls) != 1 || len(calls[0].Str("secrets", "k")) != 1<<20 {
		t.Errorf("long line: %d calls, err %v", len(calls), err)
	}

	if got := ShortMethod("/csi.v1.Node/NodePublishVolume"); got != "NodePublishVolume" {
		t.Errorf("ShortMethod = %q", got)
	}
	if got := ShortMethod("Probe"); got != "Probe" {
		t.Errorf("ShortMethod = %q", got)
	}
}
