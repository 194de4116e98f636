// Command csi-mock-driver runs the CSI mock driver that the Kubernetes e2e
// tests use (k8s.io/kubernetes/test/e2e/storage/drivers/csi-test, v1.36.3)
// as a stand-alone process listening on a unix socket.
//
// The mock's Identity, Controller and Node services are served unchanged,
// except for the few knobs the mock's service.Config does not have, which are
// implemented by a thin wrapper (see README.md): --node-id,
// --disable-node-stage, --disable-get-volume-stats, --single-node-multi-writer
// and --create-volumes.
//
// Every gRPC call is logged at klog -v=3 as one line
//
//	gRPCCall: {"Method":...,"Request":...,"Response":...,"Error":...,"FullError":...}
//
// in the format of the Kubernetes e2e embedded mock driver
// (test/e2e/storage/drivers/csi.go, MockCSICalls.LogGRPC).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"

	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/driver"
	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service"
)

// grpcCallPrefix is what the Kubernetes e2e framework looks for in the
// driver's log (test/e2e/storage/drivers/csi.go).
const grpcCallPrefix = "gRPCCall:"

type options struct {
	endpoint string

	// service.Config knobs.
	driverName                 string
	disableAttach              bool
	attachLimit                int64
	nodeExpansion              bool
	nodeVolumeCondition        bool
	volumeMountGroup           bool
	disableControllerExpansion bool
	disableOnlineExpansion     bool
	permissiveTargetPath       bool
	enableTopology             bool

	// Wrapper knobs (not in service.Config).
	nodeID                string
	disableNodeStage      bool
	disableGetVolumeStats bool
	singleNodeMultiWriter bool
	createVolumes         int
}

func main() {
	os.Exit(run())
}

func run() int {
	hostname, _ := os.Hostname()
	var o options
	fs := flag.CommandLine
	klog.InitFlags(fs) // -v, -vmodule, -logtostderr, ...

	fs.StringVar(&o.endpoint, "endpoint", "", "unix socket to listen on: /path/csi.sock or unix:///path/csi.sock (required)")
	fs.StringVar(&o.driverName, "name", service.Name, "CSI driver name returned by GetPluginInfo (Config.DriverName)")
	fs.StringVar(&o.nodeID, "node-id", hostname, "node ID returned by NodeGetInfo and accepted by ControllerPublish/Unpublish; empty = the mock's own behaviour (node ID == driver name)")
	fs.BoolVar(&o.disableAttach, "disable-attach", false, "Config.DisableAttach: ControllerPublish/Unpublish return Unimplemented and NodeStage/NodePublish do not need publish_context[\"device\"]")
	fs.Int64Var(&o.attachLimit, "attach-limit", 0, "Config.AttachLimit: NodeGetInfo max_volumes_per_node and ControllerPublish limit (0 = unlimited)")
	fs.BoolVar(&o.nodeExpansion, "node-expansion", false, "Config.NodeExpansionRequired: advertise node capability EXPAND_VOLUME")
	fs.BoolVar(&o.nodeVolumeCondition, "node-volume-condition", false, "Config.NodeVolumeConditionRequired: advertise node capability VOLUME_CONDITION")
	fs.BoolVar(&o.volumeMountGroup, "volume-mount-group", false, "Config.VolumeMountGroupRequired: advertise node capability VOLUME_MOUNT_GROUP")
	fs.BoolVar(&o.disableControllerExpansion, "disable-controller-expansion", false, "Config.DisableControllerExpansion")
	fs.BoolVar(&o.disableOnlineExpansion, "disable-online-expansion", false, "Config.DisableOnlineExpansion: plugin capability VolumeExpansion OFFLINE instead of ONLINE")
	fs.BoolVar(&o.permissiveTargetPath, "permissive-target-path", false, "Config.PermissiveTargetPath (has no effect in v1.36.3: the check it relaxes never fails)")
	fs.BoolVar(&o.enableTopology, "enable-topology", false, "Config.EnableTopology: plugin capability VOLUME_ACCESSIBILITY_CONSTRAINTS, NodeGetInfo topology io.kubernetes.storage.mock/node=some-mock-node")
	fs.BoolVar(&o.disableNodeStage, "disable-node-stage", false, "wrapper: do not advertise STAGE_UNSTAGE_VOLUME; NodeStage/NodeUnstage return Unimplemented")
	fs.BoolVar(&o.disableGetVolumeStats, "disable-get-volume-stats", false, "wrapper: do not advertise GET_VOLUME_STATS")
	fs.BoolVar(&o.singleNodeMultiWriter, "single-node-multi-writer", false, "wrapper: advertise node capability SINGLE_NODE_MULTI_WRITER")
	fs.IntVar(&o.createVolumes, "create-volumes", 0, "wrapper: CreateVolume this many volumes at start-up, so volume IDs \"1\"..\"3+N\" exist (the mock always has \"1\", \"2\", \"3\")")
	flag.Parse()
	defer klog.Flush()

	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %q\n", fs.Args())
		return 2
	}
	sock := strings.TrimPrefix(o.endpoint, "unix://")
	if sock == "" || strings.Contains(sock, "://") {
		fmt.Fprintf(os.Stderr, "--endpoint must be a unix socket path or unix:///path, got %q\n", o.endpoint)
		return 2
	}
	if o.createVolumes < 0 {
		fmt.Fprintln(os.Stderr, "--create-volumes must be >= 0")
		return 2
	}

	svc := service.New(service.Config{
		DisableAttach:               o.disableAttach,
		DriverName:                  o.driverName,
		AttachLimit:                 o.attachLimit,
		NodeExpansionRequired:       o.nodeExpansion,
		NodeVolumeConditionRequired: o.nodeVolumeCondition,
		VolumeMountGroupRequired:    o.volumeMountGroup,
		DisableControllerExpansion:  o.disableControllerExpansion,
		DisableOnlineExpansion:      o.disableOnlineExpansion,
		PermissiveTargetPath:        o.permissiveTargetPath,
		EnableTopology:              o.enableTopology,
	})
	for i := 1; i <= o.createVolumes; i++ {
		rsp, err := svc.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
			Name: fmt.Sprintf("pre-provisioned-%d", i),
			VolumeCapabilities: []*csi.VolumeCapability{{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			}},
		})
		if err != nil {
			klog.Errorf("creating volume %d: %v", i, err)
			return 1
		}
		klog.V(2).Infof("created volume %q", rsp.GetVolume().GetVolumeId())
	}

	w := &wrapper{Service: svc, o: o}
	drv := driver.NewCSIDriver(&driver.CSIDriverServers{Controller: w, Identity: w, Node: w})

	_ = os.Remove(sock) // stale socket from a previous run
	l, err := net.Listen("unix", sock)
	if err != nil {
		klog.Errorf("listen on %s: %v", sock, err)
		return 1
	}
	if err := drv.Start(l, logInterceptor); err != nil {
		klog.Errorf("start mock driver: %v", err)
		_ = l.Close()
		_ = os.Remove(sock)
		return 1
	}
	klog.Infof("CSI mock driver %q (node ID %q) listening on unix://%s", o.driverName, w.nodeID(), sock)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	klog.Infof("received %v, stopping", s)
	drv.Stop()
	_ = os.Remove(sock)
	return 0
}

// logInterceptor logs every call exactly like the Kubernetes e2e embedded mock
// driver (MockCSICalls.LogGRPC in test/e2e/storage/drivers/csi.go): encoding/json
// of the request and response structs, Error as a string and FullError as the
// google.rpc.Status (code + message). The mock package's own default
// interceptor writes the same line but its FullError is always {} or null.
func logInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (rsp any, err error) {
	rsp, err = handler(ctx, req)
	logMessage := struct {
		Method    string
		Request   any
		Response  any
		Error     string
		FullError *spb.Status
	}{
		Method:   info.FullMethod,
		Request:  req,
		Response: rsp,
	}
	if err != nil {
		logMessage.Error = err.Error()
		logMessage.FullError = grpcstatus.Convert(err).Proto()
	}
	msg, jerr := json.Marshal(logMessage)
	if jerr != nil {
		msg = []byte(fmt.Sprintf(`{"Method":%q,"Error":%q}`, info.FullMethod, "cannot marshal call: "+jerr.Error()))
	}
	klog.V(3).Infof("%s %s\n", grpcCallPrefix, msg)
	return rsp, err
}

// wrapper adds the knobs that service.Config lacks. Everything not overridden
// here goes straight to the mock.
type wrapper struct {
	service.Service
	o options
}

func (w *wrapper) nodeID() string {
	if w.o.nodeID == "" {
		return w.o.driverName // what the mock itself uses
	}
	return w.o.nodeID
}

// mockNodeID maps the node ID we advertise to the one the mock checks
// internally (its driver name).
func (w *wrapper) mockNodeID(id string) string {
	if w.o.nodeID != "" && id == w.o.nodeID {
		return w.o.driverName
	}
	return id
}

func (w *wrapper) NodeGetInfo(ctx context.Context, req *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	rsp, err := w.Service.NodeGetInfo(ctx, req)
	if rsp != nil {
		rsp.NodeId = w.nodeID()
	}
	return rsp, err
}

func (w *wrapper) NodeGetCapabilities(ctx context.Context, req *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	rsp, err := w.Service.NodeGetCapabilities(ctx, req)
	if rsp == nil {
		return rsp, err
	}
	caps := rsp.Capabilities[:0:0]
	for _, c := range rsp.Capabilities {
		switch c.GetRpc().GetType() {
		case csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			if w.o.disableNodeStage {
				continue
			}
		case csi.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			if w.o.disableGetVolumeStats {
				continue
			}
		}
		caps = append(caps, c)
	}
	if w.o.singleNodeMultiWriter {
		caps = append(caps, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{
				Type: csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
			}},
		})
	}
	rsp.Capabilities = caps
	return rsp, err
}

func (w *wrapper) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if w.o.disableNodeStage {
		return nil, grpcstatus.Error(codes.Unimplemented, "NodeStageVolume: STAGE_UNSTAGE_VOLUME is disabled (--disable-node-stage)")
	}
	return w.Service.NodeStageVolume(ctx, req)
}

func (w *wrapper) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if w.o.disableNodeStage {
		return nil, grpcstatus.Error(codes.Unimplemented, "NodeUnstageVolume: STAGE_UNSTAGE_VOLUME is disabled (--disable-node-stage)")
	}
	return w.Service.NodeUnstageVolume(ctx, req)
}

func (w *wrapper) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if id := w.mockNodeID(req.GetNodeId()); id != req.GetNodeId() {
		req = proto.Clone(req).(*csi.ControllerPublishVolumeRequest) // keep the logged request as received
		req.NodeId = id
	}
	return w.Service.ControllerPublishVolume(ctx, req)
}

func (w *wrapper) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if id := w.mockNodeID(req.GetNodeId()); id != req.GetNodeId() {
		req = proto.Clone(req).(*csi.ControllerUnpublishVolumeRequest)
		req.NodeId = id
	}
	return w.Service.ControllerUnpublishVolume(ctx, req)
}

func (w *wrapper) ControllerGetVolume(ctx context.Context, req *csi.ControllerGetVolumeRequest) (*csi.ControllerGetVolumeResponse, error) {
	rsp, err := w.Service.ControllerGetVolume(ctx, req)
	if ids := rsp.GetStatus().GetPublishedNodeIds(); len(ids) > 0 {
		for i, id := range ids {
			if id == w.o.driverName {
				ids[i] = w.nodeID()
			}
		}
	}
	return rsp, err
}
