// Package csiclient is the gRPC side of the simulated kubelet: it dials the
// driver's unix socket the way the kubelet does (a new connection for every
// call), records every call into a Trace, and redacts secrets from what is
// printed.
package csiclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Endpoint is the filesystem path of a driver's unix socket.
type Endpoint string

// ParseEndpoint accepts the forms drivers and kubelets use: unix:///path,
// unix:/path, unix://path and a bare path; a relative path is taken from
// the working directory.
func ParseEndpoint(s string) (Endpoint, error) {
	if s == "" {
		return "", errors.New("no endpoint given (--endpoint or CSI_ENDPOINT)")
	}
	p := s
	if rest, ok := strings.CutPrefix(s, "unix:"); ok {
		p = strings.TrimPrefix(rest, "//")
	} else if strings.Contains(s, "://") {
		return "", fmt.Errorf("endpoint %q: only unix sockets are supported", s)
	}
	if p == "" {
		return "", fmt.Errorf("endpoint %q: no socket path", s)
	}
	// A relative path (csi.sock, ./csi.sock, unix://csi.sock) is the
	// socket in the working directory, as a shell user means it; it is
	// made absolute now, so that the trace and the cleanup hint name it
	// wherever they are read.
	if !filepath.IsAbs(p) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("endpoint %q: %w", s, err)
		}
		p = abs
	}
	return Endpoint(p), nil
}

// Check reports whether the endpoint is a socket, before any call is made,
// so that a typo gives a clear message instead of a gRPC "Unavailable".
func (e Endpoint) Check() error {
	fi, err := os.Stat(string(e))
	if os.IsNotExist(err) {
		return fmt.Errorf("endpoint %s: %w%s", e, err, missingSocketHint(string(e)))
	}
	if err != nil {
		return fmt.Errorf("endpoint %s: %w", e, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("endpoint %s: not a unix socket", e)
	}
	return nil
}

// Dialer is a grpc.ClientConnInterface that opens a new connection for every
// call and closes it afterwards, as the kubelet's csiDriverClient does
// (newGrpcConn in pkg/volume/csi/csi_client.go): drivers see one connection
// per RPC, including each capability query.
type Dialer struct {
	Endpoint Endpoint
}

var _ grpc.ClientConnInterface = (*Dialer)(nil)

// Invoke dials, makes one unary call and closes the connection. A call
// that failed because the socket could not be connected to is a
// *DialError: gRPC reports it as Unavailable, the code a driver that is
// running may answer with too.
func (d *Dialer) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	// gRPC dials on a goroutine of its own.
	var mu sync.Mutex
	var dialErr error
	conn, err := d.dial(func(err error) { mu.Lock(); dialErr = err; mu.Unlock() })
	if err != nil {
		return err
	}
	defer conn.Close()
	err = conn.Invoke(ctx, method, args, reply, opts...)
	mu.Lock()
	defer mu.Unlock()
	if err != nil && dialErr != nil {
		return &DialError{Endpoint: d.Endpoint, Dial: dialErr, Err: err}
	}
	return err
}

// DialError is a call that never reached a driver: nothing accepted the
// connection on the socket (connection refused, no such file). Err is the
// call's gRPC error (status Unavailable), Dial why the connect failed.
type DialError struct {
	Endpoint Endpoint
	Dial     error
	Err      error
}

func (e *DialError) Error() string { return e.Err.Error() }
func (e *DialError) Unwrap() error { return e.Err }

// NotListening says what a DialError means for a person.
func (e *DialError) NotListening() string {
	return fmt.Sprintf("nothing listens on the socket %s (%v): is the driver running, on this socket?", e.Endpoint, e.Dial)
}

// NewStream is not used by any CSI node call.
func (d *Dialer) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, errors.New("csiclient: streaming calls are not supported")
}

// dial mirrors the kubelet's options: authority "localhost", insecure
// credentials, and a raw unix dialer on the socket path.
// failed is told why the connect failed, if it did.
func (d *Dialer) dial(failed func(error)) (*grpc.ClientConn, error) {
	path := string(d.Endpoint)
	return grpc.NewClient("passthrough:///"+path,
		grpc.WithAuthority("localhost"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
			if err != nil {
				failed(err)
			}
			return c, err
		}),
	)
}
