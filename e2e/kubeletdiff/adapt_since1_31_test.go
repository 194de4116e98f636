//go:build !before1_31

package kubeletdiff

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/component-base/version"
)

// codeMinorVersion is the release's own "1.X".
func codeMinorVersion() string { return version.DefaultKubeBinaryVersion }

// dialDriver connects to the driver's socket as node-driver-registrar does.
func dialDriver(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
}
