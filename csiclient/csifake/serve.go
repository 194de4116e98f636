package csifake

import (
	"net"
	"os"
	"path"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	// The CSI services and messages must be registered for the lookup of a
	// method's request and response types.
	_ "github.com/container-storage-interface/spec/lib/go/csi"
)

// Serve serves the driver on l until the returned server is stopped. Every
// CSI method is routed to Invoke, so a socket client sees the same answers,
// faults and recording as an in-process one (without trace labels, which
// do not cross the socket).
func (d *Driver) Serve(l net.Listener) *grpc.Server {
	srv := grpc.NewServer(grpc.UnknownServiceHandler(d.streamHandler))
	go func() { _ = srv.Serve(l) }()
	return srv
}

// streamHandler serves one unary CSI call that arrived over a socket.
func (d *Driver) streamHandler(_ any, stream grpc.ServerStream) error {
	full, ok := grpc.MethodFromServerStream(stream)
	if !ok {
		return status.Error(codes.Internal, "csifake: no method")
	}
	req, resp, err := messagesFor(full)
	if err != nil {
		return err
	}
	if err := stream.RecvMsg(req); err != nil {
		return err
	}
	if err := d.Invoke(stream.Context(), full, req, resp); err != nil {
		return err
	}
	return stream.SendMsg(resp)
}

// messagesFor returns new request and response messages of a method named
// "/csi.v1.Node/NodePublishVolume", from the registered descriptors.
func messagesFor(full string) (proto.Message, proto.Message, error) {
	svc, method := path.Split(full)
	desc, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(path.Base(svc)))
	if err != nil {
		return nil, nil, status.Errorf(codes.Unimplemented, "csifake: unknown service of %s", full)
	}
	sd, ok := desc.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, nil, status.Errorf(codes.Unimplemented, "csifake: %s is not a service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return nil, nil, status.Errorf(codes.Unimplemented, "csifake: unknown method %s", full)
	}
	in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		return nil, nil, status.Errorf(codes.Internal, "csifake: %v", err)
	}
	out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil, nil, status.Errorf(codes.Internal, "csifake: %v", err)
	}
	return in.New().Interface(), out.New().Interface(), nil
}

// ServeTest serves the driver on a socket in a fresh short temporary
// directory (a unix socket path must stay under 108 bytes, which t.TempDir
// may exceed) and returns the socket's path; the server stops and the
// directory goes when the test ends.
func ServeTest(t testing.TB, d *Driver) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csifake-")
	if err != nil {
		t.Fatalf("csifake: %v", err)
	}
	sock := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("csifake: %v", err)
	}
	srv := d.Serve(l)
	t.Cleanup(func() {
		srv.Stop()
		_ = os.RemoveAll(dir)
	})
	return sock
}
