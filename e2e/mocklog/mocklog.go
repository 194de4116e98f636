// Package mocklog parses the gRPC call log of the Kubernetes e2e CSI mock
// driver (e2e/mockdriver, run with -v=3).
//
// The driver writes one klog line per call:
//
//	I1122 01:29:01.130160   13224 main.go:191] gRPCCall: {"Method":"/csi.v1.Node/NodePublishVolume","Request":{...},"Response":{},"Error":"","FullError":null}
//
// The JSON is encoding/json over the Go CSI structs: snake_case field names
// from the protobuf json tags, zero values omitted, oneofs under their Go
// field names ("AccessType":{"Mount":{...}}, capabilities as
// {"Type":{"Rpc":{"type":1}}}), enums as numbers, maps as JSON objects and
// secrets in the clear. Lines without the "gRPCCall:" marker are ignored.
package mocklog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Marker precedes the JSON of every logged call (the same string the
// Kubernetes e2e framework looks for).
const Marker = "gRPCCall:"

// maxLine bounds one log line; calls with large secrets or contexts stay far
// below it.
const maxLine = 16 << 20

// Call is one logged gRPC call.
type Call struct {
	// Method is the short method name, e.g. "NodePublishVolume".
	Method string
	// FullMethod is the gRPC method as logged, e.g. "/csi.v1.Node/NodePublishVolume".
	FullMethod string
	// Request is the request message decoded into generic JSON values
	// (numbers are float64, enums are numbers). Empty requests are an empty map.
	Request map[string]any
	// Response is the response decoded into generic JSON values; nil when the
	// call failed, usually map[string]any otherwise.
	Response any
	// Error is the error string, e.g. "rpc error: code = NotFound desc = 5";
	// "" for success.
	Error string
	// Code is the gRPC status code number from FullError (0 = OK).
	Code int
	// Message is the gRPC status message from FullError.
	Message string
	// Line is the 1-based line number of the call in the log.
	Line int
	// Raw is the JSON text of the call as logged.
	Raw string
}

// OK reports whether the call succeeded.
func (c Call) OK() bool { return c.Error == "" && c.Code == 0 }

// Get returns the request value at the given path of JSON object keys, e.g.
// Get("volume_capability", "AccessType", "Mount", "fs_type"), or nil.
func (c Call) Get(path ...string) any {
	var v any = c.Request
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// Str returns the request value at path if it is a string, else "".
func (c Call) Str(path ...string) string {
	s, _ := c.Get(path...).(string)
	return s
}

// logLine is the JSON logged by the driver.
type logLine struct {
	Method    string
	Request   map[string]any
	Response  any
	Error     string
	FullError *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

// Parse reads a mock driver log and returns its calls in log order. On a line
// that has the marker but no valid JSON after it, Parse returns the calls
// read so far and an error naming the line.
func Parse(r io.Reader) ([]Call, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	var calls []Call
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		i := strings.Index(line, Marker)
		if i < 0 {
			continue
		}
		raw := strings.TrimSpace(line[i+len(Marker):])
		c, err := parseCall(raw)
		if err != nil {
			return calls, fmt.Errorf("mocklog: line %d: %w", n, err)
		}
		c.Line = n
		calls = append(calls, c)
	}
	if err := sc.Err(); err != nil {
		return calls, fmt.Errorf("mocklog: after line %d: %w", n, err)
	}
	return calls, nil
}

func parseCall(raw string) (Call, error) {
	var l logLine
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return Call{}, err
	}
	if l.Method == "" {
		return Call{}, fmt.Errorf("no Method in %q", raw)
	}
	c := Call{
		Method:     ShortMethod(l.Method),
		FullMethod: l.Method,
		Request:    l.Request,
		Response:   l.Response,
		Error:      l.Error,
		Raw:        raw,
	}
	if c.Request == nil {
		c.Request = map[string]any{}
	}
	if l.FullError != nil {
		c.Code, c.Message = l.FullError.Code, l.FullError.Message
	}
	return c, nil
}

// ShortMethod turns "/csi.v1.Node/NodePublishVolume" into "NodePublishVolume".
func ShortMethod(full string) string {
	return full[strings.LastIndex(full, "/")+1:]
}

// Filter returns the calls whose short Method is one of methods, in order.
func Filter(calls []Call, methods ...string) []Call {
	var out []Call
	for _, c := range calls {
		for _, m := range methods {
			if c.Method == m {
				out = append(out, c)
				break
			}
		}
	}
	return out
}
