package csiclient

import (
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// The text trace is printed as the calls happen, so its columns cannot be
// sized after the fact: each is as wide as the longest value it can hold
// (the result column fits every gRPC code, so DeadlineExceeded or
// FailedPrecondition keep the columns in line; the method column every
// method of the services the kubelet, the sidecars and conformance call,
// so ControllerUnpublishVolume or ValidateVolumeCapabilities too).
const (
	seqWidth       = 3
	componentWidth = 9
	operationWidth = 14
)

var methodWidth = func() int {
	w := 0
	for _, sd := range []grpc.ServiceDesc{csi.Identity_ServiceDesc, csi.Controller_ServiceDesc, csi.Node_ServiceDesc} {
		for _, m := range sd.Methods {
			w = max(w, len(m.MethodName))
		}
	}
	return w
}()

var resultWidth = func() int {
	w := len("OK")
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		w = max(w, len(c.String()))
	}
	return w
}()

// TraceHeader is the header line of the text trace, over its columns
// (without its line end: printers escape the line breaks of what they are
// given).
func TraceHeader() string {
	return fmt.Sprintf("%*s %-*s %-*s %-*s %-*s %-8s %s", seqWidth, "#", componentWidth, "component", operationWidth, "operation",
		methodWidth, "method", resultWidth, "result", "time", "detail")
}
