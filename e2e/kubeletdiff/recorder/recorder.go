// Package recorder is a CSI driver that does nothing but answer success and
// write down what it was asked: one JSON object per call, with a stable key
// order, so that two runs (the kubelet's own code and csi-kubelet-sim) can be
// compared line by line.
//
// It behaves like a driver where a kubelet can tell: it advertises the node
// capabilities it is given, creates the target of NodePublishVolume (a
// directory with one file in it, so that the kubelet's fsGroup walk has
// something to walk; for a block volume a file with a loop device's node
// bind-mounted on it, see block.go) and removes it on NodeUnpublishVolume.
// Besides the
// request it records what the kubelet left on disk for the driver to see
// (the "fs" member: the staging and target paths, their parents, the
// kubelet's vol_data.json), which is part of what a kubelet does too.
package recorder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Config is what the driver says about itself.
type Config struct {
	DriverName       string
	VendorVersion    string
	NodeID           string
	NodeCapabilities []string // csi.NodeServiceCapability_RPC_Type names, e.g. STAGE_UNSTAGE_VOLUME
	// BlockDir is where block volumes get their image files, each attached
	// to a loop device that is bind-mounted on the publish target (needs
	// root). Empty: a block volume is published as an empty regular file.
	BlockDir string
	// Faults make the driver fail calls instead of answering success.
	Faults []Fault
}

// Fault fails calls of one method: from the From-th call on (counting from
// 1), To of them (0: all later ones), with Code. A failed NodePublishVolume
// of a filesystem volume first empties the target, as a driver that
// unmounted it before failing would leave it.
type Fault struct {
	Method string // short name, NodePublishVolume
	From   int
	To     int
	Code   codes.Code
}

// fails tells whether the n-th call of method fails, and with which code.
func (c Config) fails(method string, n int) (codes.Code, bool) {
	for _, f := range c.Faults {
		if f.Method == method && n >= f.From && (f.To == 0 || n <= f.To) {
			return f.Code, true
		}
	}
	return codes.OK, false
}

// Call is one recorded request.
type Call struct {
	Method  string // the full gRPC method, /csi.v1.Node/NodePublishVolume
	Request map[string]any
	FS      map[string]any // what the driver found on disk, for the calls where it looks
}

// Line is the call as one JSON object with sorted keys.
func (c Call) Line() string {
	m := map[string]any{"method": c.Method, "request": c.Request}
	if c.FS != nil {
		m["fs"] = c.FS
	}
	return Canonical(m)
}

// Short is the method name without the service.
func (c Call) Short() string { return c.Method[strings.LastIndex(c.Method, "/")+1:] }

// Recorder is a running driver.
type Recorder struct {
	cfg  Config
	caps []*csi.NodeServiceCapability
	srv  *grpc.Server
	lis  net.Listener
	out  io.Writer
	done chan struct{}

	mu    sync.Mutex
	calls []Call
	block map[string]*blockVolume // by volume id, with BlockDir
	// faultBase is, per method (short name), how many calls came before
	// the faults in cfg were set: a Fault counts from there.
	faultBase map[string]int
}

// Start serves the driver on the unix socket path (removed first if it is
// left from an earlier run). Every call is also written to out, if not nil.
func Start(socket string, cfg Config, out io.Writer) (*Recorder, error) {
	r := &Recorder{cfg: cfg, out: out, done: make(chan struct{}), block: map[string]*blockVolume{}, faultBase: map[string]int{}}
	if err := r.SetNodeCapabilities(cfg.NodeCapabilities); err != nil {
		return nil, err
	}
	_ = os.Remove(socket)
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	r.lis = lis
	r.srv = grpc.NewServer(
		grpc.UnaryInterceptor(r.intercept),
		grpc.UnknownServiceHandler(r.unknown),
	)
	csi.RegisterIdentityServer(r.srv, &identity{r: r})
	csi.RegisterNodeServer(r.srv, &node{r: r})
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(lis)
	}()
	return r, nil
}

// retiredNodeCapabilities are node capabilities that newer CSI specs no
// longer name, by their number on the wire: a test binary built with such a
// spec still serves them to the older kubelets that ask (VOLUME_CONDITION:
// up to 1.36, with the CSIVolumeHealth gate).
var retiredNodeCapabilities = map[string]int32{"VOLUME_CONDITION": 4}

// SetNodeCapabilities changes what NodeGetCapabilities answers from now on
// (a driver that serves one case after another; the kubelet asks each time).
func (r *Recorder) SetNodeCapabilities(names []string) error {
	var caps []*csi.NodeServiceCapability
	for _, name := range names {
		v, ok := csi.NodeServiceCapability_RPC_Type_value[name]
		if !ok {
			v, ok = retiredNodeCapabilities[name]
		}
		if !ok {
			return fmt.Errorf("recorder: unknown node capability %q", name)
		}
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
			Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_Type(v)}}})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.caps = caps
	return nil
}

// SetFaults replaces the faults from now on; their calls count from here
// (a driver that serves one case after another).
func (r *Recorder) SetFaults(faults []Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg.Faults = append([]Fault(nil), faults...)
	r.faultBase = map[string]int{}
	for _, c := range r.calls {
		r.faultBase[c.Short()]++
	}
}

// SetBlockDir changes Config.BlockDir for the volumes published from now
// on ("": block volumes published as empty regular files).
func (r *Recorder) SetBlockDir(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg.BlockDir = dir
}

func (r *Recorder) blockDir() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg.BlockDir
}

// failing tells whether the n-th call of method (counted from the start)
// fails, and with which code.
func (r *Recorder) failing(method string, n int) (codes.Code, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg.fails(method, n-r.faultBase[method])
}

// Release unmounts and detaches what the driver still holds (a teardown
// that never completed), and says what it released.
func (r *Recorder) Release() []string { return r.releaseAll() }

// Stop stops serving and removes the socket, then releases the block
// devices a teardown left published or staged (unmounts the targets,
// detaches the loop devices). It returns what it had to release.
func (r *Recorder) Stop() []string {
	r.srv.Stop()
	<-r.done
	_ = os.Remove(r.lis.Addr().String())
	return r.releaseAll()
}

// Calls returns what was recorded so far.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// Count is how many calls of a method (short name) were recorded.
func (r *Recorder) Count(short string) int {
	n := 0
	for _, c := range r.Calls() {
		if c.Short() == short {
			n++
		}
	}
	return n
}

// record appends c and returns how many calls of its method there are now.
func (r *Recorder) record(c Call) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
	if r.out != nil {
		fmt.Fprintln(r.out, c.Line())
	}
	n := 0
	for _, o := range r.calls {
		if o.Method == c.Method {
			n++
		}
	}
	return n
}

func (r *Recorder) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	c := Call{Method: info.FullMethod}
	switch m := req.(type) {
	case proto.Message:
		c.Request = Message(m)
	case protoadapt.MessageV1:
		// Older CSI specs (v1.9.0, the one Kubernetes 1.36 builds with) are
		// generated for the first protobuf API.
		c.Request = Message(protoadapt.MessageV2Of(m))
	default:
		c.Request = map[string]any{BadRequest: fmt.Sprintf("not a protobuf message: %T", req)}
	}
	// What the kubelet left on disk before the driver does anything (for
	// NodeUnpublishVolume: what it did to the target since the publish,
	// i.e. the fsGroup walk).
	c.FS = observe(req)
	n := r.record(c)
	if code, ok := r.failing(c.Short(), n); ok {
		if q, isPublish := req.(*csi.NodePublishVolumeRequest); isPublish && q.GetVolumeCapability().GetBlock() == nil {
			_ = os.RemoveAll(filepath.Join(q.GetTargetPath(), "data"))
		}
		return nil, status.Errorf(code, "recorder: injected failure of %s call %d", c.Short(), n)
	}
	return handler(ctx, req)
}

func (r *Recorder) unknown(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	_ = r.record(Call{Method: method, Request: map[string]any{"_unknown_method": true}})
	return status.Errorf(codes.Unimplemented, "recorder: %s is not implemented", method)
}

// BadRequest is the key of a request the recorder could not write down;
// a test must fail on it, since both sides would record it alike.
const BadRequest = "_recorder_error"

// Message is a request as protojson with the proto field names, decoded
// again so that it prints with sorted keys. Fields the message type does
// not know (a newer CSI spec on the sending side) are not dropped
// silently: they show as "_unknown_fields".
func Message(m proto.Message) map[string]any {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return map[string]any{BadRequest: "protojson: " + err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	out := map[string]any{}
	if err := dec.Decode(&out); err != nil {
		return map[string]any{BadRequest: "decode: " + err.Error()}
	}
	if u := unknownFields(m.ProtoReflect(), ""); len(u) > 0 {
		out["_unknown_fields"] = u
	}
	return out
}

func unknownFields(m protoreflect.Message, path string) []string {
	var out []string
	if raw := m.GetUnknown(); len(raw) > 0 {
		out = append(out, fmt.Sprintf("%s%x", prefix(path), []byte(raw)))
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := path + "." + string(fd.Name())
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				out = append(out, unknownFields(l.Get(i).Message(), fmt.Sprintf("%s[%d]", p, i))...)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				out = append(out, unknownFields(mv.Message(), fmt.Sprintf("%s[%v]", p, k.Interface()))...)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			out = append(out, unknownFields(v.Message(), p)...)
		}
		return true
	})
	return out
}

func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

// Canonical is v as JSON with sorted keys and no HTML escaping.
func Canonical(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf(`{"_encode_error":%q}`, err.Error())
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// observe is what the driver sees on disk when a call arrives.
func observe(req any) map[string]any {
	switch q := req.(type) {
	case *csi.NodeStageVolumeRequest:
		p := q.GetStagingTargetPath()
		fs := map[string]any{
			"staging_target_path":   stat(p),
			"staging_parent":        stat(filepath.Dir(p)),
			"staging_vol_data.json": readFile(filepath.Join(filepath.Dir(p), "vol_data.json")),
		}
		if d := blockDataFile(p); d != "" {
			fs["block_vol_data.json"] = readFile(d)
		}
		return fs
	case *csi.NodePublishVolumeRequest:
		p := q.GetTargetPath()
		fs := map[string]any{
			"target_path":   stat(p),
			"target_parent": stat(filepath.Dir(p)),
			"vol_data.json": readFile(filepath.Join(filepath.Dir(p), "vol_data.json")),
		}
		if s := q.GetStagingTargetPath(); s != "" {
			fs["staging_target_path"] = stat(s)
			if d := blockDataFile(s); d != "" {
				fs["block_vol_data.json"] = readFile(d)
			}
		}
		return fs
	case *csi.NodeUnpublishVolumeRequest:
		p := q.GetTargetPath()
		return map[string]any{
			"target_path":      stat(p),
			"target_path/data": stat(filepath.Join(p, "data")),
		}
	case *csi.NodeUnstageVolumeRequest:
		p := q.GetStagingTargetPath()
		return map[string]any{
			"staging_target_path":   stat(p),
			"staging_vol_data.json": readFile(filepath.Join(filepath.Dir(p), "vol_data.json")),
		}
	case *csi.NodeGetVolumeStatsRequest:
		return map[string]any{"volume_path": stat(q.GetVolumePath())}
	}
	return nil
}

// blockDataFile is where the kubelet keeps a block volume's vol_data.json
// (<root>/plugins/kubernetes.io/csi/volumeDevices/<spec>/data/), given its
// staging path (.../volumeDevices/staging/<spec>); "" for other paths.
func blockDataFile(staging string) string {
	dir, spec := filepath.Split(staging)
	dir = filepath.Clean(dir)
	if filepath.Base(dir) != "staging" || filepath.Base(filepath.Dir(dir)) != "volumeDevices" {
		return ""
	}
	return filepath.Join(filepath.Dir(dir), spec, "data", "vol_data.json")
}

func stat(p string) any {
	if p == "" {
		return nil
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		return "error: " + err.Error()
	}
	out := map[string]any{"mode": fi.Mode().String()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		out["uid"] = st.Uid
		out["gid"] = st.Gid
	}
	return out
}

func readFile(p string) any {
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

type identity struct {
	csi.UnimplementedIdentityServer
	r *Recorder
}

func (s *identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: s.r.cfg.DriverName, VendorVersion: s.r.cfg.VendorVersion}, nil
}

func (s *identity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

func (s *identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

type node struct {
	csi.UnimplementedNodeServer
	r *Recorder
}

func (s *node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: s.r.cfg.NodeID}, nil
}

func (s *node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return &csi.NodeGetCapabilitiesResponse{Capabilities: s.r.caps}, nil
}

// NodeStageVolume attaches a block volume's loop device (with BlockDir).
func (s *node) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if s.r.blockDir() != "" && req.GetVolumeCapability().GetBlock() != nil {
		if err := s.r.stageBlock(req.GetVolumeId(), req.GetStagingTargetPath()); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume detaches a block volume's loop device if no target
// has it any more.
func (s *node) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if err := s.r.unstageBlock(req.GetVolumeId(), req.GetStagingTargetPath()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume makes the target as a driver's mount would: a directory
// with content; for a block volume a file, with a device bind-mounted on it
// when the driver has a BlockDir.
func (s *node) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	t := req.GetTargetPath()
	if t == "" {
		return nil, status.Error(codes.InvalidArgument, "target_path missing")
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		if s.r.blockDir() != "" {
			if err := s.r.publishBlock(req.GetVolumeId(), t); err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
			return &csi.NodePublishVolumeResponse{}, nil
		}
		if err := os.WriteFile(t, nil, 0o640); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.Mkdir(t, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	// Fixed modes whatever the umask, so both runs start from the same state.
	if err := os.Chmod(t, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	data := filepath.Join(t, "data")
	if err := os.WriteFile(data, []byte("recorded\n"), 0o640); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Chmod(data, 0o640); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (s *node) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if _, err := s.r.unpublishBlock(req.GetTargetPath()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.RemoveAll(req.GetTargetPath()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (s *node) NodeGetVolumeStats(context.Context, *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: 1 << 30, Used: 1 << 20, Available: 1<<30 - 1<<20},
		{Unit: csi.VolumeUsage_INODES, Total: 1000, Used: 10, Available: 990},
	}}, nil
}

func (s *node) NodeExpandVolume(context.Context, *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	return &csi.NodeExpandVolumeResponse{}, nil
}
