package realkubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrar is node-driver-registrar's part: it asks the driver its name
// (GetPluginInfo), then serves the registration socket the kubelet's plugin
// watcher finds in <root>/plugins_registry and dials (GetInfo, then
// NotifyRegistrationStatus).
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string

	mu     sync.Mutex
	status *registerapi.RegistrationStatus
}

// startRegistrar registers the driver on csiSocket with the kubelet; the
// cleanup stops serving and removes the socket (the kubelet deregisters the
// driver then).
func startRegistrar(ctx context.Context, t *testing.T, csiSocket string) *registrar {
	conn, err := grpc.NewClient("unix://"+csiSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	conn.Close()
	if err != nil {
		t.Fatalf("registrar: GetPluginInfo: %v", err)
	}
	r := &registrar{name: info.GetName(), endpoint: csiSocket}
	sock := filepath.Join(kubeletRoot, "plugins_registry", r.name+"-reg.sock")
	if err := os.MkdirAll(filepath.Dir(sock), 0o750); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("registrar: %v", err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		_ = os.Remove(sock)
	})
	return r
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.name,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = s
	return &registerapi.RegistrationStatusResponse{}, nil
}

// reset forgets the kubelet's last NotifyRegistrationStatus (before a
// restart of the kubelet, whose plugin watcher registers the driver again).
func (r *registrar) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = nil
}

// registered is a readiness check: the kubelet said it registered the driver.
func (r *registrar) registered(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.status == nil:
		return fmt.Errorf("no NotifyRegistrationStatus yet")
	case !r.status.PluginRegistered:
		return fmt.Errorf("the kubelet refused the driver: %s", r.status.Error)
	}
	return nil
}
