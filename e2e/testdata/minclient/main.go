// Command minclient is the floor BenchmarkRunVsMinimalClient measures `run`
// against: it makes the CSI calls listed in a file, in order, each on a new
// gRPC connection to the driver (as the kubelet dials per call), creating
// only the directories a CO must create before NodeStageVolume and
// NodePublishVolume, and removes the root dir at the end. No manifests, no
// kubelet rules, no printing.
//
//	minclient SOCKET CALLS.json ROOT
//
// CALLS.json is [{"method": "NodeStageVolume", "request": {...}}, ...] with
// the requests in protojson; "@ROOT@" in it stands for ROOT.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

type call struct {
	Method  string          `json:"method"`
	Request json.RawMessage `json:"request"`
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: minclient SOCKET CALLS.json ROOT")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "minclient:", err)
		os.Exit(1)
	}
}

func run(sock, callsFile, root string) error {
	data, err := os.ReadFile(callsFile)
	if err != nil {
		return err
	}
	var calls []call
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(data), "@ROOT@", root)), &calls); err != nil {
		return fmt.Errorf("%s: %w", callsFile, err)
	}
	for _, c := range calls {
		if err := do(sock, c); err != nil {
			return fmt.Errorf("%s: %w", c.Method, err)
		}
	}
	return os.RemoveAll(root)
}

// do makes one call on a new connection.
func do(sock string, c call) error {
	m, err := method(c.Method)
	if err != nil {
		return err
	}
	req := newMessage(m.Input())
	if err := protojson.Unmarshal(c.Request, req); err != nil {
		return err
	}
	if err := makeDirs(req); err != nil {
		return err
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority("localhost"))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := "/" + string(m.Parent().FullName()) + "/" + string(m.Name())
	return conn.Invoke(ctx, full, req, newMessage(m.Output()))
}

// makeDirs creates what the CO must: the staging dir, the target's parent.
func makeDirs(req proto.Message) error {
	switch r := req.(type) {
	case *csi.NodeStageVolumeRequest:
		return os.MkdirAll(r.GetStagingTargetPath(), 0o750)
	case *csi.NodePublishVolumeRequest:
		return os.MkdirAll(filepath.Dir(r.GetTargetPath()), 0o750)
	}
	return nil
}

// method finds a CSI method by its short name in the csi.v1 services.
func method(name string) (protoreflect.MethodDescriptor, error) {
	svcs := csi.File_csi_proto.Services()
	for i := range svcs.Len() {
		if m := svcs.Get(i).Methods().ByName(protoreflect.Name(name)); m != nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("no CSI method %q", name)
}

func newMessage(d protoreflect.MessageDescriptor) proto.Message {
	t, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
	if err != nil {
		panic(err)
	}
	return t.New().Interface()
}
