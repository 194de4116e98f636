package csiclient_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient"
	"github.com/csi-kubelet-sim/csi-kubelet-sim/csiclient/csifake"
)

// staleSocket is a socket file nothing listens on any more, as a driver
// that died leaves it: connecting is refused.
func staleSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stale-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	return sock
}

func getPluginInfo(sock string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := csi.NewIdentityClient(&csiclient.Dialer{Endpoint: csiclient.Endpoint(sock)}).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	return err
}

// Both ends of "Unavailable" over a real socket: nothing listening is a
// *DialError that says so; a driver answering Unavailable is a driver that
// answered, with its own code and message (issue 17).
func TestClassifyOverSocket(t *testing.T) {
	t.Run("nothing listens", func(t *testing.T) {
		sock := staleSocket(t)
		err := getPluginInfo(sock)
		var de *csiclient.DialError
		if !errors.As(err, &de) || csiclient.Classify(err) != csiclient.NotListening || status.Code(err) != codes.Unavailable {
			t.Fatalf("error %v (%T), want a *DialError, still Unavailable", err, err)
		}
		if got := csiclient.Explain(err); !strings.Contains(got, "nothing listens on the socket "+sock) || !strings.Contains(got, "connection refused") {
			t.Errorf("explained as %q", got)
		}
	})
	t.Run("the driver answers Unavailable", func(t *testing.T) {
		d := csifake.New(csifake.Config{Name: "drv.example.com", NodeID: "n1"})
		d.Errors("GetPluginInfo", status.Error(codes.Unavailable, "driver version not set"))
		err := getPluginInfo(csifake.ServeTest(t, d))
		var de *csiclient.DialError
		if err == nil || errors.As(err, &de) || csiclient.Classify(err) != csiclient.Answered {
			t.Fatalf("error %v (%T), want an answer", err, err)
		}
		st, ok := csiclient.DriverStatus(err)
		if !ok || st.Code() != codes.Unavailable || st.Message() != "driver version not set" {
			t.Errorf("driver status %v %v", st, ok)
		}
		if got, want := csiclient.Explain(err), `the driver answered with an error: code Unavailable, message "driver version not set"`; got != want {
			t.Errorf("explained as %q, want %q", got, want)
		}
	})
	t.Run("no answer in time", func(t *testing.T) {
		d := csifake.New(csifake.Config{Name: "drv.example.com", NodeID: "n1"})
		d.HangNext("GetPluginInfo", 1)
		sock := csifake.ServeTest(t, d)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := csi.NewIdentityClient(&csiclient.Dialer{Endpoint: csiclient.Endpoint(sock)}).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		if csiclient.Classify(err) != csiclient.NoAnswer {
			t.Errorf("error %v classified %v, want NoAnswer", err, csiclient.Classify(err))
		}
	})
}
