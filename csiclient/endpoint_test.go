package csiclient

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

func TestParseEndpoint(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in      string
		want    Endpoint
		wantErr string
	}{
		{"unix:///csi/csi.sock", "/csi/csi.sock", ""},
		{"unix:/csi/csi.sock", "/csi/csi.sock", ""},
		{"/csi/csi.sock", "/csi/csi.sock", ""},
		{"unix:///var/lib/kubelet/plugins/hostpath.csi.k8s.io/csi.sock", "/var/lib/kubelet/plugins/hostpath.csi.k8s.io/csi.sock", ""},
		{"", "", "no endpoint given (--endpoint or CSI_ENDPOINT)"},
		{"tcp://127.0.0.1:10000", "", `endpoint "tcp://127.0.0.1:10000": only unix sockets are supported`},
		{"unix://csi.sock", Endpoint(filepath.Join(cwd, "csi.sock")), ""},
		{"csi.sock", Endpoint(filepath.Join(cwd, "csi.sock")), ""},
		{"./run/csi.sock", Endpoint(filepath.Join(cwd, "run/csi.sock")), ""},
		{"unix:../csi.sock", Endpoint(filepath.Join(filepath.Dir(cwd), "csi.sock")), ""},
		{"unix:", "", `endpoint "unix:": no socket path`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseEndpoint(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseEndpoint = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestEndpointCheck(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Endpoint(sock).Check(); err != nil {
		t.Errorf("socket: %v", err)
	}
	if err := Endpoint(file).Check(); err == nil || err.Error() != "endpoint "+file+": not a unix socket" {
		t.Errorf("regular file: %v", err)
	}
	if err := Endpoint(dir + "/missing").Check(); err == nil || !strings.HasPrefix(err.Error(), "endpoint "+dir+"/missing: ") || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

type identity struct {
	csi.UnimplementedIdentityServer
}

func (identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: "hostpath.csi.k8s.io", VendorVersion: "v1"}, nil
}

type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// docs/kubelet.md §12: a new connection for every RPC.
func TestDialerConnectionPerCall(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "csi.sock")
	raw, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l := &countingListener{Listener: raw}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, identity{})
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	client := csi.NewIdentityClient(&Dialer{Endpoint: Endpoint(sock)})
	for i := range 3 {
		resp, err := client.GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{})
		if err != nil || resp.GetName() != "hostpath.csi.k8s.io" {
			t.Fatalf("call %d: %v, %v", i, resp, err)
		}
	}
	if n := l.accepted.Load(); n != 3 {
		t.Errorf("connections = %d, want 3 (one per call)", n)
	}
	if _, err := (&Dialer{}).NewStream(context.Background(), nil, ""); err == nil {
		t.Errorf("NewStream succeeded")
	}
}

// A missing socket's error names what its directory holds, sockets first,
// or that the directory is empty or missing.
func TestCheckMissingSocketLists(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err = Endpoint(filepath.Join(dir, "csi-typo.sock")).Check()
	if err == nil || !strings.Contains(err.Error(), "no such file or directory; "+dir+" has sockets: csi.sock; other entries: notes.txt") {
		t.Errorf("error %v", err)
	}
	empty := t.TempDir()
	if err := Endpoint(filepath.Join(empty, "x.sock")).Check(); err == nil || !strings.Contains(err.Error(), empty+" is empty") {
		t.Errorf("empty dir: %v", err)
	}
	if err := Endpoint(filepath.Join(empty, "no", "x.sock")).Check(); err == nil || !strings.Contains(err.Error(), "the directory "+filepath.Join(empty, "no")+" does not exist either") {
		t.Errorf("missing dir: %v", err)
	}
}
